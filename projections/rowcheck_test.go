package projections_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A write with an empty key, or a value above MaxRowBytes, is refused
// with ErrBadRow and fails the event's Apply call even when the processor
// ignores the error: the event is dead-lettered, its neighbours applied,
// and none of its writes (before or after the bad one) survive.
func TestBadRowFailsTheCall(t *testing.T) {
	big := make([]byte, projections.MaxRowBytes+1)
	for _, c := range []struct {
		name, want string
		write      func(tx *projections.Tx) error
	}{
		{"Set empty key", "empty key", func(tx *projections.Tx) error { return tx.Set("", []byte("v")) }},
		{"Put empty key", "empty key", func(tx *projections.Tx) error { return tx.Put("", []byte("v")) }},
		{"SetJSON empty key", "empty key", func(tx *projections.Tx) error { return tx.SetJSON("", 1) }},
		{"Delete empty key", "empty key", func(tx *projections.Tx) error { return tx.Delete("") }},
		{"Set too large", "larger than MaxRowBytes", func(tx *projections.Tx) error { return tx.Set("big", big) }},
		{"Put too large", "larger than MaxRowBytes", func(tx *projections.Tx) error { return tx.Put("big", big) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, t.TempDir())
			defer s.Close()
			var got error
			fn := func(tx *projections.Tx, env *events.Envelope) error {
				if err := tx.Set("before/"+env.ID, []byte("1")); err != nil {
					return err
				}
				if env.ID == "bad" {
					got = c.write(tx) // ignored, as a careless processor would
				}
				return tx.Set("after/"+env.ID, []byte("1"))
			}
			outs, err := s.ApplyBatch("p", batchItems(t, "a", "bad", "c"), fn)
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(got, projections.ErrBadRow) || !strings.Contains(got.Error(), c.want) {
				t.Fatalf("the write returned %v, want ErrBadRow saying %q", got, c.want)
			}
			if r := results(outs); r != "AXA" {
				t.Fatalf("results %s, want AXA (the bad row's event dead-lettered, its neighbours applied)", r)
			}
			if !errors.Is(outs[1].Err, projections.ErrBadRow) {
				t.Fatalf("outcome error %v, want ErrBadRow", outs[1].Err)
			}
			for _, k := range []string{"before/bad", "after/bad", "", "big"} {
				if _, ok, _ := s.Get("p", k); ok {
					t.Fatalf("row %q of the refused call was written", k)
				}
			}
			for _, k := range []string{"before/a", "after/c"} {
				if _, ok, _ := s.Get("p", k); !ok {
					t.Fatalf("row %q of an applied neighbour is missing", k)
				}
			}
		})
	}
}

// OnRowAccess is told of every row an Apply call reads, writes, deletes
// or scans, with the event applied.
func TestOnRowAccess(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	var (
		mu  sync.Mutex
		got []string
	)
	s.OnRowAccess(func(proj string, cause *events.Envelope, row string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, proj+" "+cause.ID+" "+row)
	})
	fn := func(tx *projections.Tx, env *events.Envelope) error {
		if _, _, err := tx.Get("g/" + env.ID); err != nil {
			return err
		}
		if _, err := tx.Has("h/" + env.ID); err != nil {
			return err
		}
		var v int
		if _, err := tx.GetJSON("j/"+env.ID, &v); err != nil {
			return err
		}
		if err := tx.Set("s/"+env.ID, []byte("1")); err != nil {
			return err
		}
		if err := tx.Put("u/"+env.ID, []byte("1")); err != nil {
			return err
		}
		if err := tx.SetJSON("v/"+env.ID, 1); err != nil {
			return err
		}
		if err := tx.Delete("d/" + env.ID); err != nil {
			return err
		}
		return tx.Scan("s/", func(string, []byte) (bool, error) { return true, nil })
	}
	if _, err := s.ApplyBatch("p", batchItems(t, "a", "b"), fn); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"p a g/a", "p a h/a", "p a j/a", "p a s/a", "p a u/a", "p a v/a", "p a d/a", "p a s/a",
		"p b g/b", "p b h/b", "p b j/b", "p b s/b", "p b u/b", "p b v/b", "p b d/b", "p b s/a", "p b s/b",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("accesses\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.OnRowAccess(nil)
	got = nil
	if _, err := s.ApplyBatch("p", batchItems(t, "a", "b", "c"), fn); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("%d accesses reported after OnRowAccess(nil)", len(got))
	}
}
