package distill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/chronicle-dev/chronicle/events"
	"golang.org/x/time/rate"
)

// Prompt is the ReasoningBank distillation prompt, sent as the user
// message with {{outcome}} and {{trace}} filled in.
const Prompt = `You are analyzing a completed agent session to extract reusable strategies.
Session Outcome: {{outcome}}
Session Trace:
{{trace}}
For SUCCESSFUL outcomes, extract strategies that worked: What approach led to success? What patterns can be reused? What context made this work?
For FAILED outcomes, extract anti-patterns to avoid: What approach failed? Why did it fail? What should be done instead?
Format each extraction as:
## Memory {{n}}
**Title**: <concise name, max 50 chars>
**Description**: <when to use/avoid this, max 200 chars>
**Content**: <detailed steps or explanation>
**Tags**: <comma-separated tags>
**Outcome**: success | failure
Extract 0-3 memories. Only extract if there's genuine reusable value.
If nothing is extractable, respond with: NO_EXTRACTIONS`

// NoExtractions is the model's answer when nothing is worth keeping.
const NoExtractions = "NO_EXTRACTIONS"

// RenderPrompt fills the prompt. {{n}} stays as written: it is part of the
// answer format the model must follow.
func RenderPrompt(outcome, trace string) string {
	return strings.NewReplacer("{{outcome}}", outcome, "{{trace}}", trace).Replace(Prompt)
}

// Trace renders a session for the prompt: the task, then one line per
// minute and tool call in order, then the output.
func Trace(s Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n", s.Input.Task)
	for _, m := range s.Input.Minutes {
		var d struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(m.Data, &d)
		if d.Content == "" || m.Actor == "system" {
			continue
		}
		fmt.Fprintf(&b, "[%s] %s\n", m.Actor, Clip(d.Content, 600))
	}
	for _, c := range s.Input.Calls {
		status := "ok"
		if !c.Success {
			status = "error"
		}
		fmt.Fprintf(&b, "[tool %s] %s(%s) -> %s\n", status, c.ToolID, Clip(string(c.Inputs), 300), Clip(string(c.Result), 300))
	}
	fmt.Fprintf(&b, "Output: %s\n", Clip(s.Input.Output, 600))
	return b.String()
}

var (
	memoryHeader = regexp.MustCompile(`(?m)^#+\s*Memory\s*\d*\s*$`)
	fieldRe      = regexp.MustCompile(`(?m)^\s*[-*]*\s*\*\*(Title|Description|Content|Tags|Outcome)\*\*\s*:\s*`)
)

// ParseResponse parses a model answer into memories: NO_EXTRACTIONS gives
// none; otherwise each "## Memory n" block must carry Title, Description,
// Content and Outcome (success|failure); Tags are optional. At most three
// memories are kept; titles and descriptions are clipped to their limits.
// A block missing a field is an error naming the block and the field.
func ParseResponse(raw string) ([]Memory, error) {
	text := strings.TrimSpace(raw)
	if strings.HasPrefix(text, NoExtractions) {
		return nil, nil
	}
	locs := memoryHeader.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return nil, fmt.Errorf("distill: answer has neither %s nor a '## Memory' block", NoExtractions)
	}
	var out []Memory
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		m, err := parseBlock(text[loc[1]:end])
		if err != nil {
			return nil, fmt.Errorf("distill: memory %d: %w", i+1, err)
		}
		out = append(out, Clamp(m))
		if len(out) == MaxMemories {
			break
		}
	}
	return out, nil
}

func parseBlock(block string) (Memory, error) {
	fields := map[string]string{}
	idx := fieldRe.FindAllStringSubmatchIndex(block, -1)
	for i, m := range idx {
		end := len(block)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		fields[block[m[2]:m[3]]] = strings.TrimSpace(block[m[1]:end])
	}
	for _, f := range []string{"Title", "Description", "Content", "Outcome"} {
		if fields[f] == "" {
			return Memory{}, fmt.Errorf("field **%s** missing or empty", f)
		}
	}
	outcome := strings.ToLower(strings.Trim(fields["Outcome"], " .*"))
	if outcome != events.OutcomeSuccess && outcome != events.OutcomeFailure {
		return Memory{}, fmt.Errorf("**Outcome**: %q is not success or failure", fields["Outcome"])
	}
	var tags []string
	for _, t := range strings.Split(fields["Tags"], ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return Memory{Title: fields["Title"], Description: fields["Description"], Content: fields["Content"], Tags: tags, Outcome: outcome}, nil
}

// LLMConfig configures the LLM client. Zero fields take the documented
// defaults; Validate reports the first bad field.
type LLMConfig struct {
	// URL is the base URL of an OpenAI-compatible API, e.g.
	// http://127.0.0.1:11434/v1 (Ollama); /chat/completions is appended.
	// Required.
	URL string
	// Model is the chat model name. Required.
	Model string
	// APIKeyEnv names the environment variable holding the API key
	// (default CHRONICLE_LLM_API_KEY; empty value: no Authorization header).
	APIKeyEnv string
	// Attempts is the number of tries (default 3); the wait starts at
	// InitialBackoff (default 1 s) and doubles (backoff/v4, factor 2).
	Attempts       int
	InitialBackoff time.Duration
	// Timeout bounds one request, its answer's body included (default
	// 60 s; negative: refused by Validate). It holds with a caller-given
	// HTTPClient too: each attempt runs under a context deadline of Timeout.
	Timeout time.Duration
	// MaxRetryAfter caps the wait a 429 or 5xx answer asks for in its
	// Retry-After header (default 30 s): the next attempt waits the longer
	// of the backoff and min(Retry-After, MaxRetryAfter).
	MaxRetryAfter time.Duration
	// RatePerSecond limits requests (default 1 per second, burst 1).
	RatePerSecond float64
	// HTTPClient sends the requests (default: a new http.Client with
	// Timeout). A given client's own Timeout, if shorter, also applies.
	HTTPClient *http.Client
	// OnRetry, when set, is called after each failed attempt that will be
	// tried again, with its error ("attempt N: …") and the wait before
	// the next (default: nil, nothing said). A command can tell its user
	// why it waits: a hung endpoint held search game24 --proposer llm
	// silent for three Timeouts, 185 s (a walkthrough).
	OnRetry func(err error, wait time.Duration)
}

// redactedURL is raw with the password of its user information, if any,
// replaced by "xxxxx" (url.URL.Redacted), also when raw does not parse:
// Validate's errors printed the URL whole, password included (a security
// walkthrough, 2026-12-05).
func redactedURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority, path, _ := strings.Cut(rest, "/")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return raw
	}
	out := scheme + "://" + user + ":xxxxx" + authority[at:]
	if len(rest) > len(authority) {
		out += "/" + path
	}
	return out
}

// Validate reports the first invalid field. URL must be an http or https
// URL with a host (and a port from 1 to 65535 when it names one): before,
// "notaurl" or port 99999 started, and every model call of every worker
// failed three times and was dead-lettered (a walkthrough, 2026-11-30).
func (c LLMConfig) Validate() error {
	u, uerr := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return errors.New("distill: LLMConfig.URL: required (--llm-url)")
	case uerr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
		return fmt.Errorf("distill: LLMConfig.URL: %q is not an http or https URL with a host, e.g. http://127.0.0.1:11434/v1 (--llm-url)", redactedURL(c.URL))
	case u.Port() != "" && !validPort(u.Port()):
		return fmt.Errorf("distill: LLMConfig.URL: %q: port %s is not from 1 to 65535 (--llm-url)", redactedURL(c.URL), u.Port())
	case c.Model == "":
		return errors.New("distill: LLMConfig.Model: required (--llm-model)")
	case c.Attempts < 0:
		return errors.New("distill: LLMConfig.Attempts: must be ≥ 1")
	case !(c.RatePerSecond >= 0) || math.IsInf(c.RatePerSecond, 1): // NaN and +Inf too, which passed < 0
		return fmt.Errorf("distill: LLMConfig.RatePerSecond: %v: must be a finite number > 0 (--llm-rate)", c.RatePerSecond)
	case c.MaxRetryAfter < 0:
		return errors.New("distill: LLMConfig.MaxRetryAfter: must be ≥ 0")
	case c.Timeout < 0:
		// a negative Timeout reached http.Client as "no timeout": a hung
		// endpoint held its worker for ever
		return fmt.Errorf("distill: LLMConfig.Timeout: %v: must be ≥ 0 (0: the default 60 s)", c.Timeout)
	case c.InitialBackoff < 0:
		return fmt.Errorf("distill: LLMConfig.InitialBackoff: %v: must be ≥ 0 (0: the default 1 s)", c.InitialBackoff)
	}
	return nil
}

// validPort reports whether p is a port number from 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// LLM is a chat-completions client at temperature 0.
type LLM struct {
	cfg     LLMConfig
	key     string
	limiter *rate.Limiter
}

// NewLLM validates cfg and returns a client.
func NewLLM(cfg LLMConfig) (*LLM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "CHRONICLE_LLM_API_KEY"
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = 3
	}
	if cfg.InitialBackoff == 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.RatePerSecond == 0 {
		cfg.RatePerSecond = 1
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = 30 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: cfg.Timeout}
	}
	return &LLM{cfg: cfg, key: os.Getenv(cfg.APIKeyEnv), limiter: rate.NewLimiter(rate.Limit(cfg.RatePerSecond), 1)}, nil
}

// Model is the configured model name.
func (l *LLM) Model() string { return l.cfg.Model }

// MaxAnswerBytes is the largest HTTP body of a chat completion Complete
// reads (4 MiB); a larger answer fails at once, without a retry.
const MaxAnswerBytes = 4 << 20

// Complete sends one user message at temperature 0 and returns the
// assistant's answer. Transport errors, 429 and 5xx are retried; other 4xx
// are not; a 429 or 5xx that says when to come back (Retry-After, seconds
// or an HTTP date) is tried again no sooner than that, capped at
// MaxRetryAfter. The error of the last attempt is returned, as "model <name>
// after <n> attempts: …" without a package prefix: the distiller, the
// judge and the Game of 24 proposer name themselves in front of it; the
// PAIR revision records it in its event's error field as it is.
func (l *LLM) Complete(ctx context.Context, user string) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"model":       l.cfg.Model,
		"temperature": 0,
		"messages":    []map[string]string{{"role": "user", "content": user}},
	})
	var answer string
	attempt := 0
	var hint time.Duration // the wait the last answer asked for
	endpoint := strings.TrimRight(l.cfg.URL, "/") + "/chat/completions"
	if u, err := url.Parse(endpoint); err == nil {
		endpoint = u.Redacted() // as net/http's own errors name it
	}
	op := func() error {
		attempt++
		if err := l.limiter.Wait(ctx); err != nil {
			return backoff.Permanent(err)
		}
		// the attempt's deadline: a caller-given HTTPClient without a
		// Timeout left a hung endpoint holding its worker for ever
		actx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(actx, http.MethodPost, strings.TrimRight(l.cfg.URL, "/")+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return backoff.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if l.key != "" {
			req.Header.Set("Authorization", "Bearer "+l.key)
		}
		resp, err := l.cfg.HTTPClient.Do(req)
		if err != nil {
			return fmt.Errorf("attempt %d: %w", attempt, err)
		}
		defer resp.Body.Close()
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
		if rerr != nil {
			// the connection dropped or the client's Timeout ran out in
			// the body: said so, not "not a chat completion" of the bytes
			// that came (a walkthrough, 2026-11-30)
			return fmt.Errorf("attempt %d: POST %s: reading the answer after %d bytes: %w", attempt, endpoint, len(b), rerr)
		}
		if resp.StatusCode == http.StatusOK && len(b) > MaxAnswerBytes {
			// asking again brings the same: it was read cut, and said to be
			// "not a chat completion", three times (12 MiB read)
			return backoff.Permanent(fmt.Errorf("attempt %d: POST %s: the answer is larger than %d bytes (MaxAnswerBytes)", attempt, endpoint, MaxAnswerBytes))
		}
		if len(b) > MaxAnswerBytes {
			b = b[:MaxAnswerBytes]
		}
		if resp.StatusCode != http.StatusOK {
			err := fmt.Errorf("attempt %d: POST %s: %s: %s", attempt, endpoint, resp.Status, Clip(string(b), 300))
			if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
				hint = min(retryAfter(resp.Header.Get("Retry-After"), time.Now()), l.cfg.MaxRetryAfter)
				return err
			}
			return backoff.Permanent(err)
		}
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
			return fmt.Errorf("attempt %d: POST %s: answer is not a chat completion: %s", attempt, endpoint, Clip(string(b), 300))
		}
		if strings.TrimSpace(out.Choices[0].Message.Content) == "" {
			// an empty, null or filtered content is no answer: logged, it
			// was a judge.completed.v1 or distillation.completed.v1 with
			// "" that its processor then dead-lettered, and a redrive
			// re-applied the same empty answer (a walkthrough, 2026-11-30)
			return fmt.Errorf("attempt %d: POST %s: the answer's content is empty (finish_reason %q)", attempt, endpoint, out.Choices[0].FinishReason)
		}
		answer = out.Choices[0].Message.Content
		return nil
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.Multiplier, bo.RandomizationFactor, bo.MaxElapsedTime = l.cfg.InitialBackoff, 2, 0, 0
	err := backoff.RetryNotify(op, backoff.WithContext(backoff.WithMaxRetries(hinted{bo, &hint}, uint64(l.cfg.Attempts-1)), ctx), l.cfg.OnRetry)
	if err != nil {
		return "", fmt.Errorf("model %s after %d attempts: %w", l.cfg.Model, attempt, err)
	}
	return answer, nil
}

// hinted waits the longer of its backoff's next wait and the hint the last
// answer gave (Retry-After), then forgets the hint.
type hinted struct {
	backoff.BackOff
	hint *time.Duration
}

func (h hinted) NextBackOff() time.Duration {
	d := h.BackOff.NextBackOff()
	if d != backoff.Stop && *h.hint > d {
		d = *h.hint
	}
	*h.hint = 0
	return d
}

// retryAfter reads a Retry-After header (RFC 9110: delay-seconds or an
// HTTP date) as a wait from now; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > int64(math.MaxInt64/time.Second) {
			return math.MaxInt64
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
