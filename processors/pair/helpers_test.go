package pair_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// useLite is one USE lite embedder for every test of the package.
var useLite = sync.OnceValues(func() (embedder.Embedder, error) { return embedder.NewUSELite() })

func sharedEmbedder(t *testing.T) embedder.Embedder {
	t.Helper()
	e, err := useLite()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// scenario is one tau-bench task with a failed trial the evaluator fails
// (composite below 95) and a successful trial it passes, plus a few
// successful sessions of other tasks as competing memories.
type scenario struct {
	task          int
	failed, good  []events.Envelope
	others        [][]events.Envelope
	failedID      string
	goodID        string
	failedEvalGap []events.Gap
}

var loadScenario = sync.OnceValues(func() (scenario, error) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		return scenario{}, err
	}
	type tr struct {
		envs []events.Envelope
		ev   events.EvaluationData
		rec  taubench.Record
	}
	byTask := map[int][]tr{}
	var order []int
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			return scenario{}, err
		}
		in, err := flux.InputFromEvents(envs)
		if err != nil {
			return scenario{}, err
		}
		if _, ok := byTask[r.TaskID]; !ok {
			order = append(order, r.TaskID)
		}
		byTask[r.TaskID] = append(byTask[r.TaskID], tr{envs, flux.Evaluate(in), r})
	}
	var sc scenario
	found := false
	for _, task := range order {
		var bad, good *tr
		for i := range byTask[task] {
			x := &byTask[task][i]
			if x.rec.Reward == 0 && x.ev.Composite < pair.PassComposite && bad == nil {
				bad = x
			}
			if x.rec.Reward == 1 && x.ev.Composite >= pair.PassComposite && good == nil {
				good = x
			}
		}
		switch {
		case !found && bad != nil && good != nil:
			sc = scenario{task: task, failed: bad.envs, good: good.envs, failedID: bad.envs[0].SessionID, goodID: good.envs[0].SessionID, failedEvalGap: bad.ev.Gaps}
			found = true
		case found && good != nil && len(sc.others) < 3:
			sc.others = append(sc.others, good.envs)
		}
	}
	if !found || len(sc.others) < 3 {
		return sc, fmt.Errorf("no task with a failed and a successful trial in the sample")
	}
	return sc, nil
})

func getScenario(t *testing.T) scenario {
	t.Helper()
	sc, err := loadScenario()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// rekey copies a session's events under a new session id, with the given
// iteration and parent session in its coordination.session.started.v1.
// The started data is edited as JSON so that no field is lost to
// omitempty (the importer writes empty allow-lists the schema requires).
func rekey(t *testing.T, envs []events.Envelope, id string, iteration int, parent string) []events.Envelope {
	t.Helper()
	out := make([]events.Envelope, len(envs))
	for i, e := range envs {
		e.ID = fmt.Sprintf("%s#%04d", id, i)
		e.SessionID, e.CorrelationID = id, id
		if e.Type == events.SessionStarted {
			var m map[string]any
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			m["iteration"] = iteration
			if parent != "" {
				m["parent_session"] = parent
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			e.Data = b
		}
		if e.Type == events.WorkflowTaskCompleted {
			var m map[string]any
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			m["workflow_id"] = id
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			e.Data = b
		}
		if err := events.Validate(&e); err != nil {
			t.Fatalf("rekeyed event %d: %v", i, err)
		}
		out[i] = e
	}
	return out
}

// harness runs the sessions processor and the memory bank on a real store
// without Kafka: derived events are taken from the outbox and applied (the
// memories) or kept (the evaluations) as the relay would deliver them.
type harness struct {
	t     *testing.T
	store *projections.Store
	ix    *search.Index
	w     *pair.Worker
	off   map[string]int64
	evals map[string]*events.Envelope // session id → its latest evaluation
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ix := search.NewIndex(s, sharedEmbedder(t), nil, memories.SearchSource(), sessions.PatternSource())
	return &harness{t: t, store: s, ix: ix, w: &pair.Worker{Store: s, Index: ix}, off: map[string]int64{}, evals: map[string]*events.Envelope{}}
}

func (h *harness) apply(proc string, topic events.Topic, env *events.Envelope, fn projections.ApplyFunc) {
	h.t.Helper()
	if _, err := h.store.Apply(proc, projections.Position{Topic: string(topic), Offset: h.off[proc]}, env, fn); err != nil {
		h.t.Fatalf("%s %s: %v", proc, env.ID, err)
	}
	h.off[proc]++
}

// send applies envs as the sessions processor, then relays the outbox.
func (h *harness) send(envs ...events.Envelope) {
	h.t.Helper()
	for i := range envs {
		h.apply(sessions.Name, events.TopicSessions, &envs[i], sessions.Processor{}.Apply)
	}
	h.relay()
}

// record applies a memory.recorded.v1 to the memory bank.
func (h *harness) record(env events.Envelope) {
	h.t.Helper()
	h.apply(memories.Name, events.TopicMemories, &env, memories.Processor{}.Apply)
}

func (h *harness) relay() {
	h.t.Helper()
	for {
		entries, err := h.store.PendingOutbox(100)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(entries) == 0 {
			return
		}
		for _, e := range entries {
			env, err := events.ParseEvent(e.Value)
			if err != nil {
				h.t.Fatal(err)
			}
			switch env.Type {
			case events.MemoryRecorded:
				h.record(env)
			case events.PatternCounted:
				h.apply(sessions.PatternsName, events.TopicPatterns, &env, sessions.PatternsProcessor{}.Apply)
			case events.EvaluationCompleted:
				var ev events.EvaluationData
				if err := env.Decode(&ev); err != nil {
					h.t.Fatal(err)
				}
				h.evals[ev.SessionID] = &env
				h.apply(pair.OutcomesName, events.TopicEvaluations, &env, pair.Outcomes{}.Apply) // the global table
			}
		}
		if err := h.store.AckOutbox(entries); err != nil {
			h.t.Fatal(err)
		}
	}
}

// eval is the evaluation of session id.
func (h *harness) eval(id string) (*events.Envelope, events.EvaluationData) {
	h.t.Helper()
	env, ok := h.evals[id]
	if !ok {
		h.t.Fatalf("no evaluation of %s", id)
	}
	var ev events.EvaluationData
	if err := env.Decode(&ev); err != nil {
		h.t.Fatal(err)
	}
	return env, ev
}

// memoryOf returns the memories whose source sessions contain id.
func memoriesOf(t *testing.T, store *projections.Store, id string) []memories.Memory {
	t.Helper()
	var out []memories.Memory
	err := memories.Each(store, func(m memories.Memory) bool {
		for _, s := range m.SourceSessions {
			if s == id {
				out = append(out, m)
				break
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// behind lists what every processor and worker of p still had to read
// (topic/partition, next, committed, end), to tell a stalled consumer
// from a slow one when a test gives up waiting.
func behind(ctx context.Context, p *pipeline.Pipeline) string {
	lags, err := p.Lag(ctx)
	var out []string
	for _, l := range lags {
		if l.Lag > 0 {
			out = append(out, fmt.Sprintf("%s %s/%d next %d committed %d end %d", l.Processor, l.Topic, l.Partition, l.Next, l.Committed, l.End))
		}
	}
	// the workers' groups, and what was dead-lettered (a worker's failure
	// commits past its event)
	var workers []string
	for _, w := range p.Workers {
		n, werr := processors.WorkerLag(ctx, p.Admin(), []processors.Worker{w})
		workers = append(workers, fmt.Sprintf("%s lag %d (%v)", w.Name(), n, werr))
	}
	var letters []string
	ls, lerr := deadletter.List(ctx, p.Broker.Addrs())
	for _, l := range ls {
		letters = append(letters, fmt.Sprintf("%s %s: %s", l.ID, l.Handler, l.Reason))
	}
	// a goroutine dump, to see what a stalled worker waits on
	dump := ""
	if f, ferr := os.CreateTemp("", "chronicle-pair-stall-*.txt"); ferr == nil {
		_ = pprof.Lookup("goroutine").WriteTo(f, 2)
		_ = f.Close()
		dump = f.Name()
	}
	return fmt.Sprintf("behind: %v (lag error %v); workers: %v; dead letters: %v (%v); goroutines in %s", out, err, workers, letters, lerr, dump)
}

// logTypes counts the records of topic by type and partition, read
// uncommitted and committed: what a stalled consumer had to read.
func logTypes(ctx context.Context, t *testing.T, p *pipeline.Pipeline, topic events.Topic) string {
	t.Helper()
	count := func(level kgo.IsolationLevel) map[string]int {
		ends, err := p.Admin().ListEndOffsets(ctx, string(topic))
		if err != nil {
			return map[string]int{"error: " + err.Error(): 1}
		}
		want := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 {
				want[o.Partition] = o.Offset
			}
		})
		out := map[string]int{}
		if len(want) == 0 {
			return out
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(topic)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(level), kgo.KeepControlRecords())
		if err != nil {
			return map[string]int{"error: " + err.Error(): 1}
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for len(want) > 0 && rctx.Err() == nil {
			cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) {
				if end, ok := want[r.Partition]; ok && r.Offset < end {
					typ := events.Type("marker")
					if !r.Attrs.IsControl() {
						typ, _ = events.RecordType(r)
					}
					out[fmt.Sprintf("%d:%s", r.Partition, typ)]++
					if r.Offset+1 >= end {
						delete(want, r.Partition)
					}
				}
			})
		}
		return out
	}
	return fmt.Sprintf("%s uncommitted %v, committed %v", topic, count(kgo.ReadUncommitted()), count(kgo.ReadCommitted()))
}

// captureLogger keeps the pipeline's Info and Error lines (the workers'
// transactions, fences and dead letters among them) for a failure report.
type captureLogger struct {
	mu     *sync.Mutex
	lines  *[]string
	fields watermill.LogFields
}

func newCaptureLogger() captureLogger {
	return captureLogger{mu: &sync.Mutex{}, lines: &[]string{}}
}

func (l captureLogger) add(level, msg string, err error, fields watermill.LogFields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.lines = append(*l.lines, fmt.Sprintf("%s %s %s %v %v", time.Now().Format("15:04:05.000"), level, msg, err, l.fields.Add(fields)))
}

func (l captureLogger) Error(msg string, err error, fields watermill.LogFields) {
	l.add("ERROR", msg, err, fields)
}
func (l captureLogger) Info(msg string, fields watermill.LogFields) { l.add("INFO", msg, nil, fields) }
func (l captureLogger) Debug(string, watermill.LogFields)           {}
func (l captureLogger) Trace(string, watermill.LogFields)           {}
func (l captureLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return captureLogger{mu: l.mu, lines: l.lines, fields: l.fields.Add(fields)}
}

// String is every line kept, one per line.
func (l captureLogger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(*l.lines, "\n")
}

// reportRetries logs the lines of a worker's failed or unconfirmed output
// transaction (the test passes when the retry wrote the outputs; the
// lines say it happened).
func (l captureLogger) reportRetries(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range *l.lines {
		if strings.Contains(line, "unconfirmed") || strings.Contains(line, "writing the outputs failed") || strings.Contains(line, "after a failed transaction") {
			t.Logf("worker retry: %s", line)
		}
	}
}
