//! What the executor's tests and benchmarks share: starting an executor binary ([`process`],
//! also the benchmarks' launcher) and talking to it over real HTTP ([`http`], also the
//! benchmarks' client), one new TCP connection per request as OpenWhisk's invoker does; the
//! guest modules; precompiling for the runtime under test.
//!
//! The executor under test is the binary of the package whose tests run (`wasm-executor-<runtime>`
//! in this build's target directory, found through the `CARGO_PKG_NAME` cargo sets for the test)
//! unless the environment names another one, as every runtime's executor, the cross builds and
//! the container image are tested with the one conformance suite: `WASM_EXECUTOR_BIN` (its path;
//! the runtime under test is read from its name `wasm-executor-<runtime>[-headless]`, or from
//! `WASM_EXECUTOR_RUNTIME` where the name says nothing, as for the image), `WASM_EXECUTOR_LAUNCHER` (a command prefix it is started
//! with, such as `qemu-aarch64-static` or the image's launcher script; it is then stopped with
//! SIGTERM so that a launcher can pass the signal on), `WASM_EXECUTOR_TARGET` (the target it was
//! built for: artifacts are precompiled on this host for that target),
//! `WASM_EXECUTOR_ARTIFACTS_ONLY=1` (a build without a compiler, such as wasmer headless: raw
//! modules are precompiled here before they are sent) and `WASM_EXECUTOR_LAUNCHER_REPORTS_PID=1`
//! (the launcher writes the executor's own pid to the file `WASM_EXECUTOR_PID_FILE` names, as
//! the container launcher does; an emulator runs the executor in its own process).

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::atomic::{AtomicU32, Ordering},
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::{Value, json};

pub mod http;
pub mod process;

use http::{Client, ConnMode};
pub use http::{Response, exchange, parse_response};
use process::ExecutorProcess;

/// A private scratch directory removed on drop.
pub struct ScratchDir(pub PathBuf);

impl ScratchDir {
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "conformance-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        ScratchDir(path.canonicalize().unwrap())
    }
}

/// The namespace the tests' grants belong to unless a test names others.
pub const NAMESPACE: &str = "guest";

impl ScratchDir {
    /// Where a grant root's directory `guest_path` of `namespace` lies on the host.
    pub fn grant_of(&self, namespace: &str, guest_path: &str) -> PathBuf {
        self.0
            .join(namespace)
            .join(guest_path.trim_start_matches('/'))
    }
}

/// The /init fields of a container of `namespace` granted the directory `guest_path`, as the
/// OpenWhisk patch sends them.
pub fn granted_in(namespace: &str, guest_path: &str) -> Value {
    json!({"namespace": namespace, "annotations": {"dir": guest_path}})
}

/// [`granted_in`] the tests' [`NAMESPACE`].
pub fn granted(guest_path: &str) -> Value {
    granted_in(NAMESPACE, guest_path)
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct Executor {
    process: ExecutorProcess,
    pub addr: SocketAddr,
    /// Its state directory (`--state-dir`), removed with it.
    pub state: ScratchDir,
    /// Its compiled-module cache, inside `state` unless `--cache-dir` said otherwise.
    pub cache: PathBuf,
    /// Sent as `Authorization: Bearer …` with every request, when the executor has a token.
    pub token: Option<String>,
    /// Where the launcher reports the executor's pid, when it is not the child's.
    pid_file: Option<PathBuf>,
}

impl Executor {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts the executor with extra flags and waits until `/health` answers.
    pub fn start_with(extra: &[&str]) -> Self {
        Self::start_with_env(extra, &[])
    }

    /// Like `start_with`, with extra environment variables for the executor process.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::healthy(Self::spawn_behind(launcher(), extra, env))
    }

    /// Like `start_with`, behind `launcher` (a command prefix, such as an emulator of another
    /// CPU) instead of `WASM_EXECUTOR_LAUNCHER`: this build's executor (or `WASM_EXECUTOR_BIN`),
    /// so not for suites whose executor only their launcher can start ([`behind_launcher`]).
    pub fn start_launched(launcher: &[&str], extra: &[&str]) -> Self {
        let words = launcher.iter().map(|w| w.to_string()).collect();
        Self::healthy(Self::spawn_behind(Some(words), extra, &[]))
    }

    /// `executor` once `/health` answers.
    fn healthy(mut executor: Self) -> Self {
        let token = executor.token.clone();
        if let Err(error) = executor.process.wait_healthy(token.as_deref()) {
            panic!("wasm-executor did not become healthy: {error:#}");
        }
        executor
    }

    /// Starts the executor with extra flags and does not wait for it (it may refuse to start).
    /// With `--listen` among them, that address is used instead of a free loopback port.
    pub fn spawn(extra: &[&str]) -> Self {
        Self::spawn_behind(launcher(), extra, &[])
    }

    fn spawn_behind(launcher: Option<Vec<String>>, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let state = ScratchDir::new("state");
        let addr = process::free_loopback_port().unwrap();
        let launched = launcher.is_some();
        let mut command = executor_command(launcher);
        if !extra.contains(&"--listen") {
            command.args(["--listen", &addr.to_string()]);
        }
        if !extra.contains(&"--state-dir") {
            command.arg("--state-dir").arg(&state.0);
        }
        let cache = extra
            .iter()
            .position(|a| *a == "--cache-dir")
            .and_then(|i| extra.get(i + 1))
            .map_or_else(|| state.0.join("cache"), PathBuf::from);
        // The artifacts made for an executor without a compiler are unsigned (as the suite's
        // portable modules are); tests of signing bring their own keys.
        if artifacts_only()
            && !extra.contains(&"--trusted-key")
            && !extra.contains(&"--allow-unsigned-artifacts")
        {
            command.arg("--allow-unsigned-artifacts");
        }
        for (flag, value) in [("--pool-threads", "8"), ("--max-concurrent", "8")] {
            if !extra.contains(&flag) {
                command.args([flag, value]);
            }
        }
        if !quotas_enforceable() {
            // Namespace quotas mount filesystems, which needs root; a test may still ask for them.
            command.env("WASM_EXECUTOR_DIR_QUOTA_MB", "0");
        }
        let pid_file = launcher_reports_pid().then(|| state.0.with_extension("pid"));
        if let Some(pid_file) = &pid_file {
            command.env("WASM_EXECUTOR_PID_FILE", pid_file);
        }
        command
            .args(extra)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let mut process = ExecutorProcess::spawn(command, addr).unwrap_or_else(|e| panic!("{e:#}"));
        // A launcher (an emulator, `docker run`) passes SIGTERM on to the executor, which then
        // ends; SIGKILL would end only the launcher and could leave the executor running. An
        // executor of its own is killed at once: a test has no use for its graceful stop.
        if !launched {
            process.grace = Duration::ZERO;
        }
        let token = extra
            .iter()
            .position(|a| *a == "--auth-token-file")
            .and_then(|i| extra.get(i + 1))
            .map(|path| std::fs::read_to_string(path).unwrap().trim().to_owned());
        Executor {
            process,
            addr,
            state,
            cache,
            token,
            pid_file,
        }
    }

    pub fn get(&self, path: &str) -> Response {
        self.try_request("GET", path, None).expect("GET")
    }

    /// The value of the executor's gauge `wasm_executor_<name>` in `/metrics`.
    pub fn gauge(&self, name: &str) -> u64 {
        let metrics = self.get("/metrics").expect(200).text();
        let prefix = format!("wasm_executor_{name} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no gauge {name} in {metrics}"))
    }

    /// Polls `condition` every 10 ms until it holds; panics with `what` after `limit` (a bound
    /// on a hang, not a timing assertion).
    pub fn wait_until(
        &self,
        limit: Duration,
        what: &str,
        mut condition: impl FnMut(&Self) -> bool,
    ) {
        let started = Instant::now();
        while !condition(self) {
            assert!(started.elapsed() < limit, "{what} (waited {limit:?})");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn post(&self, path: &str, body: &str) -> Response {
        self.try_request("POST", path, Some(body.as_bytes()))
            .expect("POST")
    }

    pub fn init(&self, id: &str, value: Value) -> Response {
        self.post(
            &format!("/{id}/init"),
            &json!({ "value": value }).to_string(),
        )
    }

    /// Inits `id` with `code` (raw module or zip bytes) and optional extra `value` fields.
    pub fn init_code(&self, id: &str, code: &[u8], extra: Value) -> Response {
        let code = code_for_executor(code);
        let mut value = json!({ "name": id, "main": "main", "binary": true, "code": b64(&code) });
        if let Value::Object(fields) = extra {
            value.as_object_mut().unwrap().extend(fields);
        }
        self.init(id, value)
    }

    /// Inits `id` with an example action from actions/dist and expects success.
    pub fn init_action(&self, id: &str, action_name: &str) {
        self.init_code(id, &action(action_name), json!({}))
            .expect(200);
    }

    pub fn run(&self, id: &str, params: Value) -> Response {
        self.post(
            &format!("/{id}/run"),
            &json!({ "value": params }).to_string(),
        )
    }

    /// How late a time limit may end an activation on this machine at this moment: one
    /// second plus 25 times the slowest of five trivial round trips (`GET /health`) measured
    /// now. The margin widens with the machine's load (a busy 2-core CI machine answers
    /// slowly) instead of being a fixed figure that only holds on a quiet one.
    pub fn late_margin(&self) -> Duration {
        let slowest = (0..5)
            .map(|_| {
                let started = Instant::now();
                self.get("/health").expect(200);
                started.elapsed()
            })
            .max()
            .unwrap();
        Duration::from_secs(1) + slowest * 25
    }

    /// Asserts that an activation ended by a time limit of `limit` took about the limit: not
    /// noticeably less (the deadline is set a moment before the request is sent), not more than
    /// the limit plus [`Self::late_margin`].
    #[track_caller]
    pub fn assert_stopped_on_time(&self, took: Duration, limit: Duration, what: &str) {
        assert!(
            took + Duration::from_millis(150) >= limit,
            "{what}: stopped before its limit of {limit:?}, after {took:?}"
        );
        let margin = self.late_margin();
        assert!(
            took <= limit + margin,
            "{what}: stopped {:?} after its limit of {limit:?} (margin now {margin:?})",
            took.saturating_sub(limit)
        );
    }

    /// `path` as the executor sees it: through its root, in its own mount namespace, where each
    /// namespace's directory is a filesystem of its own (quotas).
    pub fn seen(&self, path: &Path) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.pid()))
            .join(path.strip_prefix("/").expect("an absolute path"))
    }

    /// Where the executor with grant root `root` keeps the directory `guest_path` of `namespace`
    /// (as it sees it).
    pub fn granted_path(&self, root: &ScratchDir, namespace: &str, guest_path: &str) -> PathBuf {
        self.seen(&root.grant_of(namespace, guest_path))
    }

    /// The executor's process id: the child's, or the one its launcher reports.
    pub fn pid(&self) -> u32 {
        let Some(pid_file) = &self.pid_file else {
            return self.process.child_id();
        };
        let started = Instant::now();
        loop {
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the launcher did not report the executor's pid in {}",
                pid_file.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The executor's resident memory now (`VmRSS`), KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// How many descriptors the executor has open now.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// Asserts that the executor is alive and answers `/health`.
    #[track_caller]
    pub fn assert_healthy(&self) {
        assert_eq!(self.get("/health").expect(200).json()["status"], "ok");
    }

    /// Waits for the executor process to exit by itself; its status, or `None` if it still
    /// runs after `within`.
    pub fn exit_status(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        self.process.exit_status(within).unwrap()
    }

    /// The log lines collected since the last call, parsed.
    pub fn logs(&self, id: &str) -> Vec<Value> {
        let r = self.get(&format!("/{id}/logs"));
        r.expect(200);
        r.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l:?}: {e}")))
            .collect()
    }

    /// A container's log lines as (stream, text without its newline), without the
    /// activations' end markers.
    pub fn log_lines(&self, id: &str) -> Vec<(String, String)> {
        self.logs(id)
            .iter()
            .map(|l| {
                (
                    l["stream"].as_str().unwrap_or_default().to_owned(),
                    l["log"].as_str().unwrap_or_default().trim_end().to_owned(),
                )
            })
            .filter(|(_, text)| text != "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX")
            .collect()
    }

    /// Asserts that the line an action's top level printed on stdout at /init opens the logs
    /// of each container's first activation, once: `first` holds the logs already collected
    /// from `ids[0]`, the other containers' are collected here.
    #[track_caller]
    pub fn assert_init_output_opens_logs(
        &self,
        ids: &[&str],
        first: &[(String, String)],
        line: &str,
    ) {
        for (i, id) in ids.iter().enumerate() {
            let logs = if i == 0 {
                first.to_vec()
            } else {
                self.log_lines(id)
            };
            assert_eq!(
                logs.first(),
                Some(&("stdout".to_owned(), line.to_owned())),
                "{id}: {logs:?}"
            );
            assert_eq!(
                logs.iter().filter(|(_, l)| l == line).count(),
                1,
                "{id}: {logs:?}"
            );
        }
    }

    /// An executor with a language engine (`option` PATH) for tests of actions in that
    /// language, or `None` after checking that a build which runs precompiled artifacts only
    /// refuses them (the /init `probe`) as the operator's problem, naming the engine's language.
    pub fn with_engine(
        option: &str,
        engine: &Path,
        extra: &[&str],
        probe: Value,
        language: &str,
    ) -> Option<Executor> {
        let engine = engine.to_str().expect("a UTF-8 path");
        let own_dirs = extra
            .iter()
            .any(|a| matches!(*a, "--state-dir" | "--cache-dir"));
        let shared: &[&str] = if own_dirs {
            &[]
        } else {
            &["--cache-dir", engine_cache(Program::Executor)]
        };
        let ex = Executor::start_with(&[&[option, engine], shared, extra].concat());
        if !artifacts_only() {
            return Some(ex);
        }
        let r = ex.init("probe", probe);
        assert_eq!(r.status, 500, "{}", r.text());
        let expected = format!("{language} engine");
        assert!(r.error().contains(&expected), "{}", r.error());
        None
    }

    /// One HTTP/1.1 request on a fresh connection as the invoker sends it (JSON, this
    /// executor's Host, its token); every answer must carry Content-Length.
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> anyhow::Result<Response> {
        Client::new(self.addr, ConnMode::New)
            .with_token(self.token.clone())
            .request(method, path, body.unwrap_or_default())
    }

    /// A request with exactly `headers` (plus Content-Length and Connection: close).
    pub fn raw_request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let stream = TcpStream::connect(self.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        exchange(stream, method, path, headers, body)
    }
}

/// Checks that what an activation writes over its state stays in its instance, for an action
/// (`value`, its /init value) whose `main` reads an 8 MiB buffer its top level filled with 7s,
/// answers `changed` (pages of it not 7) and `total` (a counter, plus `n`), and fills the
/// buffer with `n`: the next activation of a container, one of another container of the same
/// action and ones at the same time must all start from the state the top level left.
pub fn writes_stay_in_their_instance(ex: Executor, value: Value) {
    ex.init("a", value.clone()).expect(200);
    ex.init("b", value).expect(200);
    let check = |ex: &Executor, id: &str, n: u64| {
        let out = ex.run(id, json!({ "n": n })).expect(200).json();
        assert_eq!(
            out["changed"], 0,
            "{id} saw an earlier activation's bytes: {out}"
        );
        assert_eq!(out["total"], n, "{id} started from another state: {out}");
    };
    for (n, id) in ["a", "a", "b", "a"].into_iter().enumerate() {
        check(&ex, id, n as u64 + 1);
    }
    let ex = std::sync::Arc::new(ex);
    let workers: Vec<_> = (0..4u64)
        .map(|w| {
            let ex = std::sync::Arc::clone(&ex);
            std::thread::spawn(move || {
                for n in 0..3 {
                    check(&ex, ["a", "b"][(w % 2) as usize], 10 * w + n + 1);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}

/// POSTs `body` as careful clients (curl above 1 MB) send large bodies: `Expect:
/// 100-continue`, the body only after the server asked for it, so a refusal before the body is
/// read arrives as an answer instead of a broken pipe.
pub fn post_expecting_continue(ex: &Executor, path: &str, body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(ex.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        ex.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "the server closed early"
        );
        raw.push(byte[0]);
    }
    if raw.starts_with(b"HTTP/1.1 100") {
        raw.clear();
        stream.write_all(body).unwrap();
    }
    stream.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

impl Drop for Executor {
    fn drop(&mut self) {
        if let Some(pid_file) = &self.pid_file {
            let _ = std::fs::remove_file(pid_file);
        }
        self.process.stop();
    }
}

/// The target directory's build profile (`target/release`) the test executable was built in,
/// where the executors and precompilers of the same build are.
pub fn build_dir() -> PathBuf {
    let test = std::env::current_exe().expect("the test executable's path");
    // target/release/deps/<test>-<hash>
    test.parent()
        .and_then(Path::parent)
        .expect("a test executable in <target>/<profile>/deps")
        .to_path_buf()
}

/// The executor under test: `WASM_EXECUTOR_BIN`, else the binary of the runtime package whose
/// tests run (its name is the package's, `wasm-executor-<runtime>`).
pub fn executor_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WASM_EXECUTOR_BIN") {
        return path.into();
    }
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| {
        panic!(
            "set WASM_EXECUTOR_BIN to the executor under test (or run the tests with cargo test)"
        )
    });
    build_dir().join(package)
}

/// What the build under test can do, as its `/health` says (`portable_modules`,
/// `guest_execution`, `suspends_guests`), asked once from an executor started for it: tests
/// branch on these, not on the runtime's name.
pub fn build_health() -> &'static Value {
    static HEALTH: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    HEALTH.get_or_init(|| Executor::start().get("/health").expect(200).json())
}

/// Whether the build can suspend a guest on its request's task (`--guest-execution async`).
pub fn suspends_guests() -> bool {
    build_health()["suspends_guests"] == true
}

/// The runtime the executor under test was built with, as `/health` must report it:
/// `WASM_EXECUTOR_RUNTIME`, else from the binary's name (`wasm-executor-<runtime>[-headless]`).
pub fn build_runtime() -> &'static str {
    static RUNTIME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        if let Ok(runtime) = std::env::var("WASM_EXECUTOR_RUNTIME") {
            return runtime;
        }
        let binary = executor_binary();
        let name = binary.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let runtime = name
            .strip_prefix("wasm-executor-")
            .map(|rest| rest.trim_end_matches("-headless"))
            .unwrap_or_else(|| {
                panic!(
                    "{}: not named wasm-executor-<runtime>; set WASM_EXECUTOR_RUNTIME",
                    binary.display()
                )
            });
        runtime.to_owned()
    })
}

/// The executor under test (see [`executor_binary`]), behind `launcher`.
fn executor_command(launcher: Option<Vec<String>>) -> Command {
    let binary = executor_binary();
    match launcher {
        Some(words) => {
            let mut command = Command::new(&words[0]);
            command.args(&words[1..]).arg(binary);
            command
        }
        None => Command::new(binary),
    }
}

/// `WASM_EXECUTOR_LAUNCHER` split into words, when set and not empty.
fn launcher() -> Option<Vec<String>> {
    let words: Vec<String> = std::env::var("WASM_EXECUTOR_LAUNCHER")
        .ok()?
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    (!words.is_empty()).then_some(words)
}

/// Whether the executor under test is started by a launcher (`WASM_EXECUTOR_LAUNCHER`: an
/// emulator, or the OCI image), rather than run directly.
pub fn behind_launcher() -> bool {
    launcher().is_some()
}

/// The target the executor under test was built for (`WASM_EXECUTOR_TARGET`, else this host's):
/// what `/health` reports and what its artifacts are precompiled for.
pub fn executor_target() -> String {
    std::env::var("WASM_EXECUTOR_TARGET").unwrap_or_else(|_| wasm_artifact::host_target())
}

/// Whether the launcher reports the executor's pid (`WASM_EXECUTOR_LAUNCHER_REPORTS_PID`).
fn launcher_reports_pid() -> bool {
    launcher().is_some()
        && std::env::var("WASM_EXECUTOR_LAUNCHER_REPORTS_PID").is_ok_and(|v| v == "1")
}

/// Whether the executor under test can mount a filesystem per namespace: it runs as root, and
/// not in the hardened image (`WASM_EXECUTOR_LAUNCHER_REPORTS_PID`), which has no capabilities.
pub fn quotas_enforceable() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root && !launcher_reports_pid()
}

/// Whether the executor under test runs precompiled artifacts only (`WASM_EXECUTOR_ARTIFACTS_ONLY`).
pub fn artifacts_only() -> bool {
    std::env::var("WASM_EXECUTOR_ARTIFACTS_ONLY").is_ok_and(|v| v == "1")
}

/// What is sent as the code of a module: the module itself, or for an executor that takes
/// artifacts only, its artifact for the executor's target (precompiled once per module and
/// kept for the test run). Bytes this build's precompiler refuses are sent as they are.
fn code_for_executor(code: &[u8]) -> Vec<u8> {
    if !artifacts_only() || !code.starts_with(b"\0asm") {
        return code.to_vec();
    }
    let name = wasm_artifact::sha256_hex(code);
    let dir = std::env::temp_dir().join(format!("conformance-artifacts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.zip"));
    if let Ok(zip) = std::fs::read(&out) {
        return zip;
    }
    try_precompile(code, &executor_target(), &[], None, &out).unwrap_or_else(|_| code.to_vec())
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Runs the precompiler of the runtime under test (`wasm-precompile-<runtime>`, in [`build_dir`]) on
/// `wasm` for `target`, signed with `key` when given, and returns the zip it wrote to `out`.
#[track_caller]
pub fn precompile(wasm: &[u8], target: &str, key: Option<&Path>, out: &Path) -> Vec<u8> {
    try_precompile(wasm, target, &[], key, out).unwrap_or_else(|e| panic!("{e}"))
}

/// [`precompile`] with `extra` arguments, with the precompiler's refusal as the error.
pub fn try_precompile(
    wasm: &[u8],
    target: &str,
    extra: &[&str],
    key: Option<&Path>,
    out: &Path,
) -> Result<Vec<u8>, String> {
    let binary = build_dir().join(format!("wasm-precompile-{}", build_runtime()));
    let input = out.with_extension("wasm");
    std::fs::write(&input, wasm).unwrap();
    let mut command = Command::new(&binary);
    command
        .arg(&input)
        .args(["--target", target, "--zip", "-o"])
        .arg(out)
        .args(extra);
    if let Some(key) = key {
        command.arg("--sign-key").arg(key);
    }
    let output = command.output().unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build the precompiler first (make build)",
            binary.display()
        )
    });
    if !output.status.success() {
        return Err(format!(
            "precompiling {} for {target}: {}",
            input.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(std::fs::read(out).unwrap())
}

/// The repository's root (this crate is `executor/testkit`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// Where `actions/build.sh` puts the example actions (`WASM_ACTIONS_DIR` elsewhere).
fn actions_dir() -> PathBuf {
    std::env::var_os("WASM_ACTIONS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("actions/dist"))
}

/// The cache directory that this test process's executors with a language engine share unless
/// a test gives them a state or cache directory of their own, and `wasm-precompile snapshot`'s:
/// each engine is compiled once per run of the suite instead of once per executor (with LLVM,
/// minutes of the wasmer suite), and most executors load the engine's cached code, as an
/// operator's restarted executor does. Emptied when the process first uses it, so that every
/// run compiles each engine once. `user` names the program the directory is for.
fn engine_cache(user: Program) -> &'static str {
    static DIRS: [std::sync::OnceLock<String>; 2] = [const { std::sync::OnceLock::new() }; 2];
    DIRS[user as usize].get_or_init(|| {
        let name = match user {
            Program::Executor => executor_binary()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Program::Precompiler => "wasm-precompile".to_owned(),
        };
        let dir = build_dir().join("conformance-engine-cache").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        // The program creates the directory itself, private to its user.
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        dir.to_str().expect("a UTF-8 path").to_owned()
    })
}

/// The programs that share an [`engine_cache`].
#[derive(Clone, Copy)]
enum Program {
    Executor,
    Precompiler,
}

/// The JavaScript engine built with the example actions.
pub fn js_engine() -> PathBuf {
    actions_dir().join("quickjs.wasm")
}

/// The Python engine built with the example actions.
pub fn python_engine() -> PathBuf {
    actions_dir().join("python.wasm")
}

/// `wasm-precompile snapshot SOURCE ENGINE_OPTION ENGINE ARGS…`: its exit and output.
pub fn precompile_snapshot(
    source: &Path,
    engine_option: &str,
    engine: &Path,
    args: &[&str],
) -> std::process::Output {
    std::process::Command::new(build_dir().join("wasm-precompile"))
        .arg("snapshot")
        .arg(source)
        .arg(engine_option)
        .arg(engine)
        .args(["--cache-dir", engine_cache(Program::Precompiler)])
        .args(args)
        .output()
        .expect("wasm-precompile runs")
}

/// `wasm-precompile snapshot SOURCE ENGINE_OPTION ENGINE ARGS… -o OUTPUT`, which must succeed:
/// the bytes it wrote.
#[track_caller]
pub fn precompiled_snapshot(
    source: &Path,
    engine_option: &str,
    engine: &Path,
    args: &[&str],
    output: &Path,
) -> Vec<u8> {
    let output_arg = output.to_str().expect("a UTF-8 path");
    let made = precompile_snapshot(
        source,
        engine_option,
        engine,
        &[args, &["-o", output_arg]].concat(),
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::fs::read(output).unwrap()
}

/// An example action module built by `actions/build.sh`.
pub fn action(name: &str) -> Vec<u8> {
    let path = actions_dir().join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build the example actions first (actions/build.sh or make actions)",
            path.display()
        )
    })
}

pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    zip_with(entries, zip::CompressionMethod::Deflated)
}

/// A zip of `entries` stored without compression, as `wasm-precompile --zip` packs artifacts.
pub fn stored_zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    zip_with(entries, zip::CompressionMethod::Stored)
}

fn zip_with(entries: &[(&str, &[u8])], method: zip::CompressionMethod) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        w.start_file(*name, options).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// A WASI command written in WAT whose `_start` prints `text` and a newline on stdout;
/// `extra` is spliced into the module (more functions, globals, exports).
pub fn printing_module(text: &str, extra: &str) -> Vec<u8> {
    wat::parse_str(printing_module_text(text, extra)).expect("valid WAT fixture")
}

/// The WebAssembly text of [`printing_module`].
pub fn printing_module_text(text: &str, extra: &str) -> String {
    let escaped: String = format!("{text}\n")
        .bytes()
        .map(|b| format!("\\{b:02x}"))
        .collect();
    format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{escaped}")
  (func $print (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start") (call $print (i32.const 1024) (i32.const {len})))
  {extra}
)"#,
        len = text.len() + 1
    )
}

/// The epoch-ms deadline `ms` from now, as OpenWhisk sends it (a string).
pub fn deadline_in(ms: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    (now + ms).to_string()
}
