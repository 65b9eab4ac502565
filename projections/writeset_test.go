package projections_test

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A Tx sees exactly its run's writes over the committed rows: random Set,
// Put, Delete, Get and Scan calls over a few prefixes, in batches of events,
// agree with a map after every call, and the committed rows equal the map
// after every batch (rows rewritten many times in one batch, deletions of
// committed and of uncommitted rows, scans across both).
func TestTxSeesItsWritesOverTheStore(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	rng := rand.New(rand.NewSource(7))
	model := map[string]string{}
	keyOf := func() string {
		return fmt.Sprintf("%c/%02d", "abc"[rng.Intn(3)], rng.Intn(12))
	}
	scanModel := func(prefix string) []string {
		var out []string
		for k, v := range model {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k+"="+v)
			}
		}
		slices.Sort(out)
		return out
	}
	var offset int64
	for batch := 0; batch < 30; batch++ {
		var items []projections.Item
		for i := 0; i < 1+rng.Intn(20); i++ {
			items = append(items, projections.Item{Pos: projections.Position{Topic: "t", Offset: offset}, Env: feedback(t, fmt.Sprintf("e%d", offset))})
			offset++
		}
		outs, err := s.ApplyBatch("ws", items, func(tx *projections.Tx, env *events.Envelope) error {
			for op := 0; op < 20; op++ {
				k := keyOf()
				switch r := rng.Intn(10); {
				case r < 5:
					v := fmt.Sprintf("%s@%s#%d", k, env.ID, op)
					set := tx.Set
					if r%2 == 0 {
						set = tx.Put // the value handed over, not copied
					}
					if err := set(k, []byte(v)); err != nil {
						return err
					}
					model[k] = v
				case r < 7:
					if err := tx.Delete(k); err != nil {
						return err
					}
					delete(model, k)
				case r < 9:
					v, ok, err := tx.Get(k)
					if err != nil {
						return err
					}
					if want, wok := model[k]; ok != wok || string(v) != want {
						return fmt.Errorf("Get %s = %q %v, want %q %v", k, v, ok, want, wok)
					}
				default:
					prefix := []string{"", "a/", "b/0", "c/1"}[rng.Intn(4)]
					var got []string
					if err := tx.Scan(prefix, func(key string, val []byte) (bool, error) {
						got = append(got, key+"="+string(val))
						return true, nil
					}); err != nil {
						return err
					}
					if want := scanModel(prefix); !slices.Equal(got, want) {
						return fmt.Errorf("Scan %q = %v, want %v", prefix, got, want)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range outs {
			if o.Result != projections.Applied {
				t.Fatalf("batch %d item %d: %v %v", batch, i, o.Result, o.Err)
			}
		}
		var stored []string
		if err := s.Scan("ws", "", "", func(key string, val []byte) (bool, error) {
			stored = append(stored, key+"="+string(val))
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := scanModel(""); !slices.Equal(stored, want) {
			t.Fatalf("after batch %d the store holds %v, want %v", batch, stored, want)
		}
	}
}

// A Scan stops when its function says so, on the store's rows and on the
// run's own writes alike.
func TestTxScanStops(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	items := batchItems(t, "x", "y")
	var got []string
	apply := func(tx *projections.Tx, env *events.Envelope) error {
		if env.ID == "x" {
			return tx.Set("k/2", []byte("committed"))
		}
		if err := tx.Set("k/1", []byte("own")); err != nil {
			return err
		}
		if err := tx.Set("k/3", []byte("own")); err != nil {
			return err
		}
		return tx.Scan("k/", func(key string, _ []byte) (bool, error) {
			got = append(got, key)
			return key != "k/2", nil
		})
	}
	for _, run := range [][]projections.Item{items[:1], items[1:]} { // x commits k/2 first
		if _, err := s.ApplyBatch("stop", run, apply); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"k/1", "k/2"}) {
		t.Fatalf("scan visited %v, want [k/1 k/2]", got)
	}
}
