// proxy.go: the OpenWhisk action-runtime protocol (POST /init, POST /run) for a native binary
// action with the blackbox convention: one fresh process of <action dir>/exec per activation,
// parameters as argv[1] (and on stdin), the last non-empty stdout line as the result, every
// other output line as the activation's logs, framed by OpenWhisk's sentinel line.

package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Texts that OpenWhisk's runtime conformance tests (and the invoker's users) expect.
const (
	sentinel          = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
	errInitTwice      = "Cannot initialize the action more than once."
	errNoCode         = "Missing main/no code to execute."
	errNotDictionary  = "The action did not return a dictionary."
	errNotInitialized = "Cannot run the action: it has not been initialized (POST /init first)."
)

// Bounds on what the proxy accepts and keeps.
const (
	maxInitBody = 64 << 20 // OpenWhisk's code limit is 48 MB, base64 adds a third
	maxRunBody  = 16 << 20 // the default payload limit is 1 MiB; leave room
	logLimit    = 10 << 20 // per stream and activation (OpenWhisk's default log limit is 10 MB)
	maxLine     = 8 << 20  // one output line, the result included
	// Linux refuses a single argv string of 32 pages (MAX_ARG_STRLEN) or more; larger
	// parameters go on stdin only, which the SDK reads when there is no argv[1].
	maxArgLen = 128<<10 - 1
	// How long to wait for an action's output pipes after the process ended (a child it
	// left behind may hold them open).
	pipeWait = 2 * time.Second
)

// Proxy is one action container's runtime: it is initialized once, then runs activations.
type Proxy struct {
	actionDir string    // where the executable lives: <actionDir>/exec
	stdout    io.Writer // the container's stdout: activation stdout logs + sentinel
	stderr    io.Writer // the container's stderr: activation stderr logs + sentinel
	baseEnv   []string  // environment every activation starts from (the proxy's own)
	logMu     sync.Mutex

	mu          sync.Mutex // guards the fields below; held for the whole of an /init
	initialized bool
	initEnv     []string // "K=V" from /init's value.env
}

// NewProxy returns an uninitialized proxy for the action in actionDir.
func NewProxy(actionDir string, stdout, stderr io.Writer, baseEnv []string) *Proxy {
	return &Proxy{actionDir: actionDir, stdout: stdout, stderr: stderr, baseEnv: baseEnv}
}

func (p *Proxy) execPath() string { return filepath.Join(p.actionDir, "exec") }

// ServeHTTP routes the two protocol endpoints; everything else is a JSON 404/405.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/init", "/run":
	default:
		writeJSON(w, http.StatusNotFound, errorBody("no such route: "+r.URL.Path))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody("use POST"))
		return
	}
	if r.URL.Path == "/init" {
		p.handleInit(w, r)
	} else {
		p.handleRun(w, r)
	}
}

// ---- /init ------------------------------------------------------------------------------

// initValue is the "value" of an /init body; name and other fields are ignored.
type initValue struct {
	Code   string                     `json:"code"`
	Binary bool                       `json:"binary"`
	Main   string                     `json:"main"` // meaningless for a native executable
	Env    map[string]json.RawMessage `json:"env"`
}

func (p *Proxy) handleInit(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Value *initValue `json:"value"`
	}
	if status, err := decodeBody(w, r, maxInitBody, &body); err != nil {
		writeJSON(w, status, errorBody("malformed /init body: "+err.Error()))
		return
	}
	v := body.Value
	if v == nil {
		v = &initValue{}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.initialized {
		writeJSON(w, http.StatusForbidden, errorBody(errInitTwice))
		return
	}
	if v.Code != "" {
		if err := p.install(v.Code, v.Binary); err != nil {
			writeJSON(w, http.StatusBadGateway, errorBody(err.Error()))
			return
		}
	}
	if err := p.checkExecutable(); err != nil {
		writeJSON(w, http.StatusBadGateway, errorBody(err.Error()))
		return
	}
	p.initEnv = envList(v.Env, "")
	p.initialized = true // only a successful /init counts: a failed one may be retried
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// install puts the code of an /init into the action directory: base64 of a zip holding an
// "exec" file (OpenWhisk's convention for native zips), base64 of a bare executable, or, with
// binary=false, the text of a script (it needs its interpreter in the image).
func (p *Proxy) install(code string, binary bool) error {
	data := []byte(code)
	if binary {
		var err error
		if data, err = base64.StdEncoding.DecodeString(code); err != nil {
			return fmt.Errorf("the action's code is not valid base64: %v", err)
		}
	}
	if err := os.MkdirAll(p.actionDir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %v", p.actionDir, err)
	}
	if binary && bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return p.unzip(data)
	}
	return writeFileAtomic(p.execPath(), bytes.NewReader(data), 0o755)
}

// unzip extracts a zip into the action directory. It must hold "exec" at its top level;
// entries must stay inside the directory and be plain files or directories.
func (p *Proxy) unzip(data []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("the action's zip cannot be read: %v", err)
	}
	// Check every entry before writing anything.
	hasExec := false
	for _, f := range zr.File {
		name := path.Clean(strings.TrimPrefix(f.Name, "./"))
		mode := f.Mode()
		switch {
		case !filepath.IsLocal(name):
			return fmt.Errorf("the action's zip has an entry outside its directory: %q", f.Name)
		case !mode.IsDir() && !mode.IsRegular():
			return fmt.Errorf("the action's zip has an entry that is not a plain file: %q", f.Name)
		case name == "exec" && mode.IsRegular():
			hasExec = true
		}
	}
	if !hasExec {
		return errors.New("the action's zip has no 'exec' file at its top level")
	}
	for _, f := range zr.File {
		name := path.Clean(strings.TrimPrefix(f.Name, "./"))
		dest := filepath.Join(p.actionDir, filepath.FromSlash(name))
		mode := f.Mode()
		if mode.IsDir() {
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
			continue
		}
		perm := mode.Perm()
		if name == "exec" || perm&0o111 != 0 {
			perm = 0o755 // zips made on some systems carry no modes
		} else if perm == 0 {
			perm = 0o644
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("the action's zip entry %q cannot be read: %v", f.Name, err)
		}
		err = writeFileAtomic(dest, rc, perm)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic writes a file next to its destination and renames it into place.
func writeFileAtomic(dest string, r io.Reader, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".install-*")
	if err != nil {
		return fmt.Errorf("cannot install the action: %v", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	_, err = io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		return fmt.Errorf("cannot install the action: %v", err)
	}
	return nil
}

// checkExecutable makes sure <actionDir>/exec exists, is a file and can be executed.
func (p *Proxy) checkExecutable() error {
	info, err := os.Stat(p.execPath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New(errNoCode)
	case err != nil:
		return fmt.Errorf("cannot use the action's executable: %v", err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("the action's executable %s is not a file", p.execPath())
	case info.Mode().Perm()&0o111 == 0:
		if err := os.Chmod(p.execPath(), 0o755); err != nil {
			return fmt.Errorf("the action's executable cannot be made executable: %v", err)
		}
	}
	return nil
}

// ---- /run -------------------------------------------------------------------------------

func (p *Proxy) handleRun(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if status, err := decodeBody(w, r, maxRunBody, &body); err != nil {
		writeJSON(w, status, errorBody("malformed /run body: "+err.Error()))
		return
	}
	// The parameters, compact (argv has no room for pretty printing); absent means {}.
	var params bytes.Buffer
	if raw, ok := body["value"]; ok && !isNull(raw) {
		if err := json.Compact(&params, raw); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody("malformed /run value: "+err.Error()))
			return
		}
	} else {
		params.WriteString("{}")
	}
	deadline, err := parseDeadline(body["deadline"])
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("malformed /run deadline: "+err.Error()))
		return
	}
	delete(body, "value")

	p.mu.Lock()
	initialized, initEnv := p.initialized, p.initEnv
	p.mu.Unlock()
	if !initialized {
		writeJSON(w, http.StatusForbidden, errorBody(errNotInitialized))
		return
	}

	// Environment: the proxy's own, then /init's env, then __OW_<FIELD> for every run field
	// but value (activation_id, action_name, deadline, api_key, ...); later entries win.
	env := make([]string, 0, len(p.baseEnv)+len(initEnv)+len(body))
	env = append(env, p.baseEnv...)
	env = append(env, initEnv...)
	env = append(env, envList(body, "__OW_")...)

	status, response := p.activate(params.Bytes(), env, deadline)
	if status == http.StatusOK {
		writeRaw(w, status, response)
	} else {
		writeJSON(w, status, errorBody(string(response)))
	}
}

// activate runs one activation and writes its logs. It returns 200 and the result, or an
// error status and the error message.
func (p *Proxy) activate(params []byte, env []string, deadline time.Time) (int, []byte) {
	stdout := newLineCapture(logLimit, maxLine)
	stderr := newLineCapture(logLimit, maxLine)
	status, response := p.execute(params, env, deadline, stdout, stderr)

	// Only an accepted result leaves the log; a rejected line stays where the developer sees it.
	stdoutLog := stdout.logText(status == http.StatusOK)
	stderrLog := stderr.logText(false)
	p.logMu.Lock() // one activation's lines stay together, even with concurrent runs
	defer p.logMu.Unlock()
	_, _ = p.stdout.Write(append(stdoutLog, sentinel+"\n"...))
	_, _ = p.stderr.Write(append(stderrLog, sentinel+"\n"...))
	return status, response
}

// execute starts <actionDir>/exec with the parameters, waits for it (killing its process
// group at the deadline) and interprets how it ended.
func (p *Proxy) execute(params []byte, env []string, deadline time.Time, stdout, stderr *lineCapture) (int, []byte) {
	ctx := context.Background()
	var limit time.Duration
	if !deadline.IsZero() {
		limit = time.Until(deadline)
		if limit <= 0 {
			return http.StatusBadGateway, []byte("The action's deadline had passed before it started.")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}

	args := []string{}
	if len(params) <= maxArgLen {
		args = append(args, string(params))
	}
	cmd := exec.CommandContext(ctx, p.execPath(), args...)
	cmd.Dir = p.actionDir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(params)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// Own process group, so that the deadline kills whatever the action started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeWait

	err := cmd.Run()
	stdout.close()
	stderr.close()
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return http.StatusBadGateway, []byte(fmt.Sprintf(
			"The action exceeded its time limits of %d milliseconds.", limit.Milliseconds()))
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// Exited with status 0 (perhaps leaving a child that holds its output open).
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return http.StatusBadGateway, []byte(fmt.Sprintf(
				"The action was killed by signal %d (%v) and produced no result.", int(ws.Signal()), ws.Signal()))
		}
		return http.StatusBadGateway, []byte(fmt.Sprintf(
			"The action exited with status %d and produced no result.", exitErr.ExitCode()))
	default:
		_, _ = fmt.Fprintf(stderr, "proxy: cannot start %s: %v\n", p.execPath(), err)
		stderr.close()
		return http.StatusBadGateway, []byte("The action could not be started: " + err.Error())
	}

	result := bytes.TrimSpace(stdout.result())
	if len(result) == 0 || result[0] != '{' || !json.Valid(result) {
		return http.StatusBadGateway, []byte(errNotDictionary)
	}
	return http.StatusOK, result
}

// ---- helpers ----------------------------------------------------------------------------

// decodeBody reads a JSON body of at most limit bytes into v; it returns the HTTP status to
// answer with when that fails.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) (int, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("larger than %d bytes", limit)
	}
	if err != nil {
		return http.StatusBadRequest, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return http.StatusBadRequest, err
	}
	return http.StatusOK, nil
}

// parseDeadline reads OpenWhisk's deadline: epoch milliseconds, sent as a string (or a
// number). Absent, null or empty means no deadline.
func parseDeadline(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 || isNull(raw) {
		return time.Time{}, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		text = string(raw) // a JSON number
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("not epoch milliseconds: %s", raw)
	}
	return time.UnixMilli(ms), nil
}

// envList turns a JSON object's fields into sorted "PREFIX<KEY>=value" entries: the key in
// upper case when there is a prefix, strings as they are, other values as JSON text, null
// skipped.
func envList(fields map[string]json.RawMessage, prefix string) []string {
	out := make([]string, 0, len(fields))
	for k, raw := range fields {
		if isNull(raw) || k == "" || strings.ContainsAny(k, "=\x00") {
			continue
		}
		name := k
		if prefix != "" {
			name = prefix + strings.ToUpper(k)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			var compact bytes.Buffer
			if json.Compact(&compact, raw) != nil {
				continue
			}
			s = compact.String()
		}
		if strings.ContainsRune(s, 0) {
			continue // cannot be passed to execve
		}
		out = append(out, name+"="+s)
	}
	sort.Strings(out)
	return out
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func errorBody(message string) map[string]string { return map[string]string{"error": message} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"error":"cannot encode the response"}`)
	}
	writeRaw(w, status, data)
}

// writeRaw answers with a JSON body and always a Content-Length: OpenWhisk's invoker treats a
// chunked answer as no answer.
func writeRaw(w http.ResponseWriter, status int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
