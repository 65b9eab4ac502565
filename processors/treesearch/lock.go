package treesearch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
)

// PromptSet is implemented by proposers and evaluators with prompt
// templates of their own (the LLM ones): name → template.
type PromptSet interface {
	Prompts() map[string]string
}

// BasePrompts are the runner's own templates, part of every lock.
func BasePrompts() map[string]string {
	return map[string]string{
		"goal_pin":         PinGoal("%s"),
		"path_header":      "Steps so far:\n",
		"candidate_header": "Candidate next step:\n",
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ConfigSHA256 is the SHA-256 of a search config's JSON.
func ConfigSHA256(c events.SearchConfig) string {
	b, _ := json.Marshal(c)
	return sha(b)
}

// SolverLock computes the lock of a solver: proposer, evaluator, model,
// config and prompt templates (the runner's and the components'), with
// LockSHA256 over the rest.
func SolverLock(searchID string, cfg events.SearchConfig, model string, p Proposer, e Evaluator) events.SolverLockedData {
	prompts := map[string]string{}
	add := func(prefix string, m map[string]string) {
		for k, v := range m {
			prompts[prefix+k] = sha([]byte(v))
		}
	}
	add("", BasePrompts())
	if ps, ok := p.(PromptSet); ok {
		add("proposer.", ps.Prompts())
	}
	if ps, ok := e.(PromptSet); ok {
		add("evaluator.", ps.Prompts())
	}
	l := events.SolverLockedData{SearchID: searchID, Proposer: p.Component(), Evaluator: e.Component(), Model: model, ConfigSHA256: ConfigSHA256(cfg), Config: &cfg, Prompts: prompts}
	b, _ := json.Marshal(l)
	l.LockSHA256 = sha(b)
	return l
}

// CheckLock refuses l when it is no lock SolverLock wrote, saying why: a
// member left out (search_id, proposer, evaluator, config_sha256,
// lock_sha256) or a lock_sha256 that is not the SHA-256 of the rest (the
// file was edited). VerifyLock compares only the members, so an edited
// prompt hash read as a prompt that differs, and {"x":1} as a solver that
// differs from an empty lock (a walkthrough, 2026-11-30).
func CheckLock(l events.SolverLockedData) error {
	switch {
	case l.SearchID == "":
		return errors.New("search_id missing")
	case l.Proposer.Name == "" || l.Evaluator.Name == "":
		return errors.New("proposer or evaluator missing")
	case l.ConfigSHA256 == "":
		return errors.New("config_sha256 missing")
	case l.LockSHA256 == "":
		return errors.New("lock_sha256 missing")
	case l.Config != nil && ConfigSHA256(*l.Config) != l.ConfigSHA256:
		return errors.New("config_sha256 is not the SHA-256 of config: the lock was edited")
	}
	check := l
	check.LockSHA256 = ""
	if b, _ := json.Marshal(check); sha(b) != l.LockSHA256 {
		return errors.New("lock_sha256 is not the SHA-256 of the rest: the lock was edited")
	}
	return nil
}

// VerifyLock refuses a solver whose lock differs from the frozen one,
// naming every differing part.
func VerifyLock(frozen, current events.SolverLockedData) error {
	var diffs []string
	if frozen.Proposer != current.Proposer {
		diffs = append(diffs, fmt.Sprintf("proposer %s@%s, locked %s@%s", current.Proposer.Name, current.Proposer.Version, frozen.Proposer.Name, frozen.Proposer.Version))
	}
	if frozen.Evaluator != current.Evaluator {
		diffs = append(diffs, fmt.Sprintf("evaluator %s@%s, locked %s@%s", current.Evaluator.Name, current.Evaluator.Version, frozen.Evaluator.Name, frozen.Evaluator.Version))
	}
	if frozen.Model != current.Model {
		diffs = append(diffs, fmt.Sprintf("model %q, locked %q", current.Model, frozen.Model))
	}
	if frozen.ConfigSHA256 != current.ConfigSHA256 {
		if d := configDiffs(frozen.Config, current.Config); len(d) > 0 {
			diffs = append(diffs, d...)
		} else {
			diffs = append(diffs, "config_sha256 "+current.ConfigSHA256+", locked "+frozen.ConfigSHA256)
		}
	}
	names := map[string]bool{}
	for k := range frozen.Prompts {
		names[k] = true
	}
	for k := range current.Prompts {
		names[k] = true
	}
	var keys []string
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if frozen.Prompts[k] != current.Prompts[k] {
			diffs = append(diffs, fmt.Sprintf("prompts.%s %q, locked %q", k, current.Prompts[k], frozen.Prompts[k]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("treesearch: the solver differs from its lock (search %s): %s", frozen.SearchID, strings.Join(diffs, "; "))
	}
	return nil
}

// configDiffs names the settings in which current differs from frozen
// ("config.beam_width 3, locked 5"), by their JSON names; none when either
// is nil (a lock written before locks held their config). Before, a
// solver with another --beam or --quota was told only that config_sha256
// differed (a walkthrough).
func configDiffs(frozen, current *events.SearchConfig) []string {
	if frozen == nil || current == nil {
		return nil
	}
	f, c := *frozen, *current
	var diffs []string
	differs := func(name string, cur, locked any) {
		if cur != locked {
			diffs = append(diffs, fmt.Sprintf("config.%s %v, locked %v", name, cur, locked))
		}
	}
	differs("beam_width", c.BeamWidth, f.BeamWidth)
	differs("beam_per_depth", c.BeamPerDepth, f.BeamPerDepth)
	differs("k", c.K, f.K)
	differs("max_depth", c.MaxDepth, f.MaxDepth)
	differs("max_expansions", c.MaxExpansions, f.MaxExpansions)
	differs("quota_tokens", c.QuotaTokens, f.QuotaTokens)
	differs("cost_per_step", c.CostPerStep, f.CostPerStep)
	return diffs
}

// Lock freezes the solver of search key, which must be solved and have
// been run by p and e: it writes solver.locked.v1 and returns the lock.
func (r *Runner) Lock(ctx context.Context, key string) (events.SolverLockedData, error) {
	s, ok, err := Get(r.Store, key)
	if err != nil {
		return events.SolverLockedData{}, err
	}
	if !ok || s.Outcome != events.SearchSolved {
		return events.SolverLockedData{}, fmt.Errorf("treesearch: search %s is not solved (outcome %q): only a successful search is locked", key, s.Outcome)
	}
	l := SolverLock(s.ID, s.Config, s.Model, r.Proposer, r.Evaluator)
	if l.Proposer != s.Proposer || l.Evaluator != s.Evaluator {
		return l, fmt.Errorf("treesearch: search %s ran %s and %s, not %s and %s", key, s.Proposer.Name, s.Evaluator.Name, l.Proposer.Name, l.Evaluator.Name)
	}
	env, err := r.event(key, "locked/"+l.LockSHA256, events.SolverLocked, l)
	if err != nil {
		return l, err
	}
	// locked before with this lock (its id is the lock's hash): the log
	// holds it, and the caller gets it again. Before, the event was written
	// again, dropped by the projection as a duplicate, and the wait for the
	// projection to apply it failed after 30 s, so a lost lock file could
	// not be written again (a walkthrough, 2026-11-30)
	if applied, same, err := r.Store.AppliedContent(Name, &env); err != nil {
		return l, err
	} else if applied && same {
		return l, nil
	}
	return l, r.publish(ctx, key, s.Seq, env)
}

func lockApply(env *events.Envelope, s *Search) error {
	var d events.SolverLockedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	switch {
	case s.Outcome != events.SearchSolved:
		return rejectf("/data/search_id", "search %s is not solved (outcome %q): only a successful search is locked", s.ID, s.Outcome)
	case d.Proposer != s.Proposer:
		return rejectf("/data/proposer", "%s@%s: the search ran %s@%s", d.Proposer.Name, d.Proposer.Version, s.Proposer.Name, s.Proposer.Version)
	case d.Evaluator != s.Evaluator:
		return rejectf("/data/evaluator", "%s@%s: the search ran %s@%s", d.Evaluator.Name, d.Evaluator.Version, s.Evaluator.Name, s.Evaluator.Version)
	case d.ConfigSHA256 != ConfigSHA256(s.Config):
		return rejectf("/data/config_sha256", "is not the SHA-256 of the search's config")
	case d.Config != nil && ConfigSHA256(*d.Config) != d.ConfigSHA256:
		return rejectf("/data/config", "its SHA-256 is not config_sha256")
	case d.Model != s.Model:
		return rejectf("/data/model", "%q: the search ran %q", d.Model, s.Model)
	}
	check := d
	check.LockSHA256 = ""
	if b, _ := json.Marshal(check); sha(b) != d.LockSHA256 {
		return rejectf("/data/lock_sha256", "is not the SHA-256 of the lock")
	}
	s.Locks = append(s.Locks, d.LockSHA256)
	return nil
}
