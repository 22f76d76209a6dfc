// proxy_test.go: protocol tests for the proxy over real HTTP with a real action process.
//
// The action is this test binary itself: when it runs with PROXY_TEST_ACTION=1 in its
// environment (set through /init's value.env, which the tests thereby check too), TestMain
// behaves as a native blackbox action instead of running the tests (see fakeAction).

package main

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("PROXY_TEST_ACTION") == "1" {
		os.Exit(fakeAction())
	}
	os.Exit(m.Run())
}

// fakeAction is the action under test. Parameters come as argv[1], or on stdin when there is
// no argv[1]; "mode" picks the behaviour.
func fakeAction() int {
	var src []byte
	if len(os.Args) > 1 {
		src = []byte(os.Args[1])
	} else {
		src, _ = io.ReadAll(os.Stdin)
	}
	var p map[string]any
	if err := json.Unmarshal(src, &p); err != nil {
		fmt.Fprintln(os.Stderr, "bad params:", err)
		return 2
	}
	emit := func(v any) {
		out, _ := json.Marshal(v)
		fmt.Println(string(out))
	}
	switch p["mode"] {
	case "sleep":
		ms, _ := p["ms"].(float64)
		time.Sleep(time.Duration(ms) * time.Millisecond)
		emit(map[string]any{"id": p["id"]})
	case "nodict":
		fmt.Println("hello")
		fmt.Println("[1,2]")
	case "exit":
		fmt.Fprintln(os.Stderr, "failing")
		return 3
	case "big":
		emit(map[string]any{"big": strings.Repeat("x", 100_000)})
	case "size":
		big, _ := p["big"].(string)
		emit(map[string]any{"argc": len(os.Args) - 1, "len": len(big)})
	default: // echo: logs on both streams, then parameters and environment, then blank lines
		fmt.Println("log line 1")
		fmt.Fprintln(os.Stderr, "err line")
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "__OW_") || k == "FOO" {
				env[k] = v
			}
		}
		emit(map[string]any{"params": p, "env": env})
		fmt.Print("\n\n")
	}
	return 0
}

// ---- fixtures -----------------------------------------------------------------------------

// syncBuffer is a bytes.Buffer safe for the proxy's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	t              *testing.T
	dir            string // the action directory
	url            string
	stdout, stderr *syncBuffer
}

// newFixture starts a proxy over HTTP on an empty action directory.
func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, dir: t.TempDir(), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	srv := httptest.NewServer(NewProxy(f.dir, f.stdout, f.stderr, os.Environ()))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// selfBytes is this test binary: the action.
func selfBytes(t *testing.T) []byte {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// bake puts the action into the directory, as the image does.
func (f *fixture) bake() {
	if err := os.WriteFile(filepath.Join(f.dir, "exec"), selfBytes(f.t), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

// post sends a body and returns the status and the decoded JSON object answered.
func (f *fixture) post(route, body string) (int, map[string]any) {
	f.t.Helper()
	resp, err := http.Post(f.url+route, "application/json", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.ContentLength != int64(len(data)) {
		f.t.Errorf("%s: Content-Length %d for a body of %d bytes", route, resp.ContentLength, len(data))
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		f.t.Fatalf("%s answered %d with non-JSON %q", route, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

const initTestEnv = `{"value":{"env":{"PROXY_TEST_ACTION":"1","FOO":"bar"}}}`

func (f *fixture) mustInit(body string) {
	f.t.Helper()
	if status, out := f.post("/init", body); status != 200 || out["ok"] != true {
		f.t.Fatalf("/init: %d %v", status, out)
	}
}

func expectError(t *testing.T, status int, out map[string]any, wantStatus int, wantText string) {
	t.Helper()
	msg, _ := out["error"].(string)
	if status != wantStatus || !strings.Contains(msg, wantText) {
		t.Fatalf("got %d %v, want %d with error containing %q", status, out, wantStatus, wantText)
	}
}

// ---- protocol -----------------------------------------------------------------------------

func TestBakedExecutableRunsWithParamsEnvAndLogs(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)

	status, out := f.post("/run", `{"value": {"name": "world", "n": [1, 2]},
		"activation_id": "a1", "action_name": "/guest/echo", "action_version": "0.0.1",
		"namespace": "guest", "transaction_id": "tx", "api_key": "k:s",
		"deadline": "`+fmt.Sprint(time.Now().Add(time.Minute).UnixMilli())+`"}`)
	if status != 200 {
		t.Fatalf("/run: %d %v", status, out)
	}
	params, _ := json.Marshal(out["params"])
	if string(params) != `{"n":[1,2],"name":"world"}` {
		t.Errorf("params %s", params)
	}
	env := out["env"].(map[string]any)
	for k, v := range map[string]string{
		"__OW_ACTIVATION_ID": "a1", "__OW_ACTION_NAME": "/guest/echo", "__OW_ACTION_VERSION": "0.0.1",
		"__OW_NAMESPACE": "guest", "__OW_TRANSACTION_ID": "tx", "__OW_API_KEY": "k:s", "FOO": "bar",
	} {
		if env[k] != v {
			t.Errorf("env %s = %v, want %q", k, env[k], v)
		}
	}
	if _, ok := env["__OW_DEADLINE"]; !ok {
		t.Error("no __OW_DEADLINE")
	}
	if _, ok := env["__OW_VALUE"]; ok {
		t.Error("value must not become an environment variable")
	}
	// The result line left the log; the blank lines after it stayed.
	if got, want := f.stdout.String(), "log line 1\n\n\n"+sentinel+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := f.stderr.String(), "err line\n"+sentinel+"\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}

	// Only the run fields present become variables.
	_, out = f.post("/run", `{"value": {}}`)
	if env := out["env"].(map[string]any); len(env) != 1 || env["FOO"] != "bar" {
		t.Errorf("env without run fields: %v", env)
	}
}

func TestInitOnlyOnce(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	status, out := f.post("/init", initTestEnv)
	expectError(t, status, out, 403, errInitTwice)
}

func TestRunBeforeInit(t *testing.T) {
	f := newFixture(t)
	f.bake()
	status, out := f.post("/run", `{"value":{}}`)
	expectError(t, status, out, 403, "not been initialized")
}

func TestMalformedBodies(t *testing.T) {
	f := newFixture(t)
	f.bake()
	status, out := f.post("/init", `{"value":`)
	expectError(t, status, out, 400, "malformed /init body")
	f.mustInit(initTestEnv)
	status, out = f.post("/run", `[1, 2]`)
	expectError(t, status, out, 400, "malformed /run body")
	status, out = f.post("/run", `{"value": {}, "deadline": "soon"}`)
	expectError(t, status, out, 400, "deadline")
}

func TestNoExecutableThenRetry(t *testing.T) {
	f := newFixture(t)
	status, out := f.post("/init", `{"value":{}}`)
	expectError(t, status, out, 502, errNoCode)
	// A failed /init does not count: the container may still be initialized.
	f.bake()
	f.mustInit(initTestEnv)
}

func TestRawExecutableCode(t *testing.T) {
	f := newFixture(t)
	code := base64.StdEncoding.EncodeToString(selfBytes(t))
	f.mustInit(`{"value":{"binary":true,"main":"main","code":"` + code + `",
		"env":{"PROXY_TEST_ACTION":"1"}}}`)
	if info, err := os.Stat(filepath.Join(f.dir, "exec")); err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("exec not installed with mode 755: %v %v", info, err)
	}
	if status, out := f.post("/run", `{"value":{"x":1}}`); status != 200 || out["params"] == nil {
		t.Fatalf("/run: %d %v", status, out)
	}
}

// zipOf builds a zip from name → content; every entry gets mode 0644.
func zipOf(t *testing.T, files map[string][]byte) string {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range files {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestZipCode(t *testing.T) {
	f := newFixture(t)
	code := zipOf(t, map[string][]byte{"exec": selfBytes(t), "data/note.txt": []byte("hi")})
	f.mustInit(`{"value":{"binary":true,"code":"` + code + `","env":{"PROXY_TEST_ACTION":"1"}}}`)
	if data, err := os.ReadFile(filepath.Join(f.dir, "data", "note.txt")); err != nil || string(data) != "hi" {
		t.Errorf("data/note.txt: %q %v", data, err)
	}
	if status, out := f.post("/run", `{"value":{}}`); status != 200 {
		t.Fatalf("/run: %d %v", status, out)
	}
}

func TestBadZips(t *testing.T) {
	for name, files := range map[string]map[string][]byte{
		"no 'exec'":         {"main": []byte("x")},
		"outside its":       {"exec": []byte("x"), "../evil": []byte("x")},
		"not valid base64!": nil,
	} {
		f := newFixture(t)
		code := "!!!"
		if files != nil {
			code = zipOf(t, files)
		}
		status, out := f.post("/init", `{"value":{"binary":true,"code":"`+code+`"}}`)
		expectError(t, status, out, 502, strings.TrimSuffix(name, "!"))
	}
}

func TestResultMustBeADictionary(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	status, out := f.post("/run", `{"value":{"mode":"nodict"}}`)
	expectError(t, status, out, 502, errNotDictionary)
	// The rejected line stays in the log.
	if got, want := f.stdout.String(), "hello\n[1,2]\n"+sentinel+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

func TestNonZeroExit(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	status, out := f.post("/run", `{"value":{"mode":"exit"}}`)
	expectError(t, status, out, 502, "exited with status 3")
	if got, want := f.stderr.String(), "failing\n"+sentinel+"\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

func TestDeadlineKillsTheAction(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	start := time.Now()
	deadline := start.Add(300 * time.Millisecond).UnixMilli()
	status, out := f.post("/run", fmt.Sprintf(`{"value":{"mode":"sleep","ms":10000},"deadline":"%d"}`, deadline))
	expectError(t, status, out, 502, "exceeded its time limits")
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the action was not killed at its deadline: %v", elapsed)
	}
	if !strings.HasSuffix(f.stdout.String(), sentinel+"\n") || !strings.HasSuffix(f.stderr.String(), sentinel+"\n") {
		t.Error("no sentinel after a timed-out activation")
	}
	// A number is accepted too, and a past deadline fails at once.
	status, out = f.post("/run", `{"value":{"mode":"sleep","ms":10000},"deadline":1}`)
	expectError(t, status, out, 502, "deadline had passed")
}

func TestConcurrentRunsAreSeparateProcesses(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	const n, ms = 6, 500
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			status, out := f.post("/run", fmt.Sprintf(`{"value":{"mode":"sleep","ms":%d,"id":%d}}`, ms, i))
			if status != 200 || out["id"] != float64(i) {
				t.Errorf("run %d: %d %v", i, status, out)
			}
		}(i)
	}
	wg.Wait()
	if elapsed := time.Since(start); elapsed > n*ms*time.Millisecond*3/4 {
		t.Errorf("%d runs of %d ms took %v: not concurrent", n, ms, elapsed)
	}
	if got := strings.Count(f.stdout.String(), sentinel); got != n {
		t.Errorf("%d sentinels on stdout, want %d", got, n)
	}
}

func TestLargeParametersGoOnStdin(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	big := strings.Repeat("y", 200_000) // beyond Linux's limit for one argv string
	status, out := f.post("/run", `{"value":{"mode":"size","big":"`+big+`"}}`)
	if status != 200 || out["argc"] != float64(0) || out["len"] != float64(len(big)) {
		t.Fatalf("/run: %d argc=%v len=%v", status, out["argc"], out["len"])
	}
	_, out = f.post("/run", `{"value":{"mode":"size","big":"small"}}`)
	if out["argc"] != float64(1) {
		t.Errorf("small parameters not in argv[1]: %v", out)
	}
}

func TestLargeResultHasContentLength(t *testing.T) {
	f := newFixture(t)
	f.bake()
	f.mustInit(initTestEnv)
	// post checks Content-Length against the body (Go would chunk beyond 2 KiB otherwise).
	if status, out := f.post("/run", `{"value":{"mode":"big"}}`); status != 200 || len(out["big"].(string)) != 100_000 {
		t.Fatalf("/run: %d", status)
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	f := newFixture(t)
	status, out := f.post("/destroy", `{}`)
	expectError(t, status, out, 404, "no such route")
	resp, err := http.Get(f.url + "/run")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET /run: %d", resp.StatusCode)
	}
}

// ---- output capture -----------------------------------------------------------------------

func TestCaptureSplitsLinesAndKeepsTheLastNonEmptyOne(t *testing.T) {
	c := newLineCapture(1<<20, 1<<20)
	for _, chunk := range []string{"a\n", "\nb", "c\r\n", "\n"} {
		_, _ = c.Write([]byte(chunk))
	}
	c.close()
	if got := string(c.result()); got != "bc" {
		t.Errorf("result %q", got)
	}
	if got := string(c.logText(true)); got != "a\n\n\n" {
		t.Errorf("log %q", got)
	}
}

func TestCaptureBoundsTheLog(t *testing.T) {
	c := newLineCapture(5, 1<<20)
	_, _ = c.Write([]byte("12345\n678\nresult"))
	c.close()
	if got := string(c.result()); got != "result" {
		t.Errorf("result %q", got)
	}
	if got := string(c.logText(true)); !strings.HasPrefix(got, "12345\nLogs were truncated") {
		t.Errorf("log %q", got)
	}
}
