//! The soak run (`make soak`): benign and hostile activations mixed for minutes against one
//! executor, which must come out as it went in. Every few seconds the clients pause at a
//! barrier, so the executor's resident memory and open descriptors are sampled while it holds
//! no request; the last minute's samples must stay within a tolerance of the minute at the
//! run's middle (growth that goes on in the second half is a leak; what the executor's pools and
//! caches fill in the first minutes, up to their bounds, is not), benign requests may fail only with 503 (turned away under load), and every
//! hostile request gets an answer (never a dropped connection or a dead process). The hostile
//! share includes slow clients (half a header, held), grants of their own namespace, and quota
//! fillers: a namespace of its own that writes until its filesystem is full, which must answer
//! ENOSPC in the guest while the benign grants keep working.

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use base64::Engine as _;
use clap::Args;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::{
    executor::{ExecutorOptions, ExecutorProcess, fresh_dir},
    http::{Client, ConnMode},
    provenance::Provenance,
    report::{Machine, Start},
};

#[derive(Debug, Args)]
pub struct SoakArgs {
    /// The executor binary (started and stopped by the run).
    #[arg(long, default_value = "target/release/wasm-executor-wasmtime")]
    executor: PathBuf,
    /// Directory of the built actions (`echo`, `add`, `filesys`, `hostile`).
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    /// How long to run, in seconds (after the warm-up).
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Warm-up before the reference samples, in seconds.
    #[arg(long, default_value_t = 30)]
    warmup_seconds: u64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Share of requests that are attacks (0 to 1).
    #[arg(long, default_value_t = 0.3)]
    hostile_share: f64,
    /// How far the last minute's RSS and descriptor counts may lie above those of the minute at
    /// the run's middle.
    #[arg(long, default_value_t = 10.0)]
    tolerance_pct: f64,
    /// Where the samples (`samples.csv`), the executor's log and the summary go.
    #[arg(long, default_value = "eval/results/soak")]
    out: PathBuf,
}

/// Seconds between samples.
/// The namespace the soak's grants belong to (`DIR_ROOT/soak/<container>`).
const SOAK_NAMESPACE: &str = "soak";
/// The namespace of the quota fillers, and its quota (MB): each filler writes four times that.
const FILLER_NAMESPACE: &str = "soak-filler";
const FILLER_QUOTA_MB: u64 = 16;
/// What a grant the full namespace cannot make says (the OS's text of ENOSPC).
const NO_SPACE: &str = "No space left on device";

const SAMPLE_EVERY: Duration = Duration::from_secs(5);
/// The window the first, middle and last figures are taken over.
const WINDOW: Duration = Duration::from_secs(60);

/// One quiescent sample of the executor.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Duration,
    rss_kib: u64,
    fds: u64,
}

/// One figure of a sample.
type Figure = fn(&Sample) -> u64;

/// Whether a benign action's result is what it should be.
type ResultCheck<'a> = Box<dyn Fn(&Value) -> bool + 'a>;

/// What the clients counted.
#[derive(Default)]
struct Tally {
    benign: AtomicU64,
    benign_turned_away: AtomicU64,
    hostile: AtomicU64,
    /// Fillers whose guest saw its filesystem full (ENOSPC or EDQUOT), or whose grant the full
    /// namespace refused.
    quota_errors: AtomicU64,
    failures: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn fail(&self, what: String) {
        let mut failures = self.failures.lock().unwrap();
        if failures.len() < 50 {
            failures.push(what);
        }
    }
}

/// The modules the clients install, base64.
struct Codes {
    echo: String,
    add: String,
    filesys: String,
    hostile: String,
    memory_hog: String,
    table_hog: String,
}

impl Codes {
    fn load(actions: &Path) -> anyhow::Result<Codes> {
        let read = |name: &str| -> anyhow::Result<String> {
            let path = actions.join(format!("{name}.wasm"));
            let bytes = std::fs::read(&path)
                .with_context(|| format!("reading {} (run actions/build.sh)", path.display()))?;
            Ok(b64(&bytes))
        };
        // Grows memory until refused, then tries once more: the container's limit ends it.
        let memory_hog = wat::parse_str(
            r#"(module (memory (export "memory") 1)
                 (func (export "_start")
                   (loop $more (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
                   unreachable))"#,
        )?;
        let table_hog = wat::parse_str(
            r#"(module (memory (export "memory") 1) (table $t 1 funcref)
                 (func (export "_start")
                   (loop $more
                     (br_if $more (i32.ne (table.grow $t (ref.null func) (i32.const 65536)) (i32.const -1))))
                   unreachable))"#,
        )?;
        Ok(Codes {
            echo: read("echo")?,
            add: read("add")?,
            filesys: read("filesys")?,
            hostile: read("hostile")?,
            memory_hog: b64(&memory_hog),
            table_hog: b64(&table_hog),
        })
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn run(args: &SoakArgs) -> anyhow::Result<()> {
    let provenance = Provenance::now();
    let (start, run_started) = (Start::now(), Instant::now());
    let codes = Arc::new(Codes::load(&args.actions)?);
    std::fs::create_dir_all(&args.out)?;
    let scratch = fresh_dir(
        &std::env::temp_dir(),
        &format!("wasm-soak-{}", std::process::id()),
    )?;
    let grants = scratch.join("grants");
    std::fs::create_dir_all(&grants)?;
    let executor = ExecutorProcess::start(&ExecutorOptions {
        binary: args.executor.clone(),
        state_dir: scratch.join("state"),
        trusted_key: None,
        log_filter: "warn".into(),
        log_path: args.out.join("executor.log"),
        extra_args: vec![
            "--dir-root".into(),
            grants.display().to_string(),
            "--dir-quota-mb".into(),
            FILLER_QUOTA_MB.to_string(),
        ],
    })?;
    let pid = executor.pid().context("the executor's pid")?;

    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(RwLock::new(()));
    let tally = Arc::new(Tally::default());
    let clients: Vec<_> = (0..args.clients)
        .map(|client| {
            let (stop, barrier, tally, codes) = (
                Arc::clone(&stop),
                Arc::clone(&barrier),
                Arc::clone(&tally),
                Arc::clone(&codes),
            );
            let (addr, hostile_share) = (executor.addr, args.hostile_share);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(client as u64);
                let mut http = Client::new(addr, ConnMode::New);
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let _running = barrier.read().unwrap();
                    round += 1;
                    let id = format!("c{client}-{round}");
                    let hostile = rng.gen_bool(hostile_share);
                    let kind = rng.gen_range(0..if hostile { 11 } else { 3 });
                    let outcome = if hostile {
                        tally.hostile.fetch_add(1, Ordering::Relaxed);
                        attack(&mut http, addr, &codes, client, &id, kind, &tally)
                    } else {
                        tally.benign.fetch_add(1, Ordering::Relaxed);
                        benign(&mut http, &codes, client, &id, kind, &tally)
                    };
                    // Whatever happened, the container goes (a failed step must not leak it).
                    if let Err(error) = outcome.and_then(|()| destroy(&mut http, &id)) {
                        tally.fail(format!(
                            "{} {kind} ({id}): {error:#}",
                            if hostile { "attack" } else { "benign" }
                        ));
                    }
                }
            })
        })
        .collect();

    let started = Instant::now();
    let total = Duration::from_secs(args.warmup_seconds + args.seconds);
    let mut samples = Vec::new();
    let mut csv = String::from("seconds,rss_kib,fds\n");
    let mut health = Client::new(executor.addr, ConnMode::New);
    let mut last_progress = Instant::now();
    while started.elapsed() < total {
        std::thread::sleep(SAMPLE_EVERY);
        let sample = {
            let _quiet = barrier.write().unwrap();
            let sample = Sample {
                at: started.elapsed(),
                rss_kib: crate::rss::rss_bytes(pid).context("the executor's RSS")? / 1024,
                fds: open_fds(pid)?,
            };
            let answer = health.get("/health")?;
            if answer.status != 200 {
                tally.fail(format!("/health answered {}", answer.status));
            }
            sample
        };
        csv.push_str(&format!(
            "{:.0},{},{}\n",
            sample.at.as_secs_f64(),
            sample.rss_kib,
            sample.fds
        ));
        if last_progress.elapsed() >= Duration::from_secs(60) {
            last_progress = Instant::now();
            tracing::info!(
                elapsed_s = sample.at.as_secs(),
                rss_kib = sample.rss_kib,
                fds = sample.fds,
                benign = tally.benign.load(Ordering::Relaxed),
                hostile = tally.hostile.load(Ordering::Relaxed),
                "soak running"
            );
        }
        samples.push(sample);
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        if client.join().is_err() {
            tally.fail("a client thread panicked".into());
        }
    }
    std::fs::write(args.out.join("samples.csv"), &csv)?;
    let filler_image = grants.join(format!(".images/{FILLER_NAMESPACE}.ext4"));
    if let Ok(image) = std::fs::metadata(&filler_image) {
        use std::os::unix::fs::MetadataExt;
        if image.blocks() * 512 > FILLER_QUOTA_MB << 20 {
            tally.fail(format!(
                "the fillers' image takes {} bytes of the disk, more than its quota",
                image.blocks() * 512
            ));
        }
    }
    executor.stop()?;
    let _ = std::fs::remove_dir_all(&scratch);

    let warmup = Duration::from_secs(args.warmup_seconds);
    let middle = warmup + Duration::from_secs(args.seconds / 2);
    let within = |from: Duration| -> Vec<Sample> {
        samples
            .iter()
            .filter(|s| s.at >= from && s.at < from + WINDOW)
            .copied()
            .collect()
    };
    let (first, halfway) = (within(warmup), within(middle));
    let last: Vec<Sample> = samples
        .iter()
        .filter(|s| s.at + WINDOW >= total)
        .copied()
        .collect();
    if first.is_empty() || halfway.is_empty() || last.is_empty() || middle + WINDOW > total {
        bail!("the run was too short to compare its middle and its last minute");
    }
    let limit = 1.0 + args.tolerance_pct / 100.0;
    let median = |of: &[Sample], field: fn(&Sample) -> u64| {
        let mut values: Vec<u64> = of.iter().map(field).collect();
        values.sort_unstable();
        values[values.len() / 2]
    };
    let figures: [(&str, Figure); 2] = [
        ("RSS (KiB)", |s| s.rss_kib),
        ("open descriptors", |s| s.fds),
    ];
    let mut drift = Vec::new();
    for (name, field) in figures {
        let (start, before, after) = (
            median(&first, field),
            median(&halfway, field),
            median(&last, field),
        );
        let ok = (after as f64) <= (before as f64) * limit;
        drift.push(
            json!({"figure": name, "first_minute": start, "middle_minute": before,
                          "last_minute": after, "ok": ok}),
        );
        if !ok {
            tally.fail(format!(
                "{name} grew from {before} at the middle to {after} in the last minute, more than {}%",
                args.tolerance_pct
            ));
        }
    }
    let failures = tally.failures.lock().unwrap().clone();
    let summary = json!({
        "tool": "wasm-bench soak",
        "date_utc": provenance.date_utc,
        "commit": provenance.commit,
        "wall_seconds": run_started.elapsed().as_secs_f64(),
        "machine": Machine::probe(start),
        "executor": args.executor,
        "seconds": args.seconds,
        "clients": args.clients,
        "benign_requests": tally.benign.load(Ordering::Relaxed),
        "benign_turned_away_503": tally.benign_turned_away.load(Ordering::Relaxed),
        "hostile_requests": tally.hostile.load(Ordering::Relaxed),
        "quota_errors_seen_by_fillers": tally.quota_errors.load(Ordering::Relaxed),
        "drift": drift,
        "failures": failures,
    });
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    if !failures.is_empty() {
        bail!(
            "the soak run failed ({} problems, first: {})",
            failures.len(),
            failures[0]
        );
    }
    Ok(())
}

/// Expects `status` (or 503, counted: the executor may turn work away under load).
fn expect(
    answer: &crate::http::Response,
    status: u16,
    what: &str,
    tally: Option<&Tally>,
) -> anyhow::Result<bool> {
    if answer.status == status {
        return Ok(true);
    }
    if answer.status == 503 {
        if let Some(tally) = tally {
            tally.benign_turned_away.fetch_add(1, Ordering::Relaxed);
        }
        return Ok(false);
    }
    bail!(
        "{what}: expected {status}, got {}: {}",
        answer.status,
        answer.text()
    )
}

fn init(
    http: &mut Client,
    id: &str,
    code: &str,
    extra: Value,
) -> anyhow::Result<crate::http::Response> {
    let mut value = json!({"name": id, "main": "main", "binary": true, "code": code});
    if let (Some(value), Value::Object(extra)) = (value.as_object_mut(), extra) {
        value.extend(extra);
    }
    http.post(
        &format!("/{id}/init"),
        json!({ "value": value }).to_string().as_bytes(),
    )
}

fn activate(http: &mut Client, id: &str, params: Value) -> anyhow::Result<crate::http::Response> {
    http.post(
        &format!("/{id}/run"),
        json!({ "value": params }).to_string().as_bytes(),
    )
}

fn destroy(http: &mut Client, id: &str) -> anyhow::Result<()> {
    let answer = http.post(&format!("/{id}/destroy"), b"")?;
    if answer.status != 200 && answer.status != 404 {
        bail!("destroy {id}: {} {}", answer.status, answer.text());
    }
    Ok(())
}

/// A benign container's life: /init, a few checked runs, /destroy.
fn benign(
    http: &mut Client,
    codes: &Codes,
    client: usize,
    id: &str,
    kind: u32,
    tally: &Tally,
) -> anyhow::Result<()> {
    let (code, extra, params, check): (&str, Value, Value, ResultCheck<'_>) = match kind {
        0 => (
            &codes.echo,
            json!({}),
            json!({"id": id}),
            Box::new(move |v| v["id"] == id),
        ),
        1 => (
            &codes.add,
            json!({}),
            json!({"param1": 2, "param2": 3}),
            Box::new(|v| v["result"] == 5),
        ),
        _ => {
            // One directory per client, rewritten by each of its containers: the namespace holds
            // what its tenants keep, not one directory per activation.
            let dir = format!("/c{client}");
            (
                &codes.filesys,
                json!({"namespace": SOAK_NAMESPACE, "annotations": {"dir": dir}}),
                json!({"dir": dir, "file": "soak.txt", "content": id}),
                Box::new(move |v| v["read"] == id),
            )
        }
    };
    if !expect(
        &init(http, id, code, extra)?,
        200,
        "benign /init",
        Some(tally),
    )? {
        return Ok(());
    }
    for _ in 0..3 {
        let answer = activate(http, id, params.clone())?;
        if expect(&answer, 200, "benign /run", Some(tally))? {
            let result: Value = serde_json::from_slice(&answer.body)?;
            if !check(&result) {
                bail!("benign /run of {id}: unexpected result {result}");
            }
        }
    }
    Ok(())
}

/// One attack; each must be answered as the API promises, and leave nothing behind.
fn attack(
    http: &mut Client,
    addr: std::net::SocketAddr,
    codes: &Codes,
    client: usize,
    id: &str,
    kind: u32,
    tally: &Tally,
) -> anyhow::Result<()> {
    let timeout = json!({"limits": {"timeout": 2000, "memory": 64, "logs": 1}});
    let in_hostile = |http: &mut Client, params: Value, status: u16| -> anyhow::Result<()> {
        expect(
            &init(http, id, &codes.hostile, timeout.clone())?,
            200,
            "hostile /init",
            None,
        )?;
        expect(&activate(http, id, params)?, status, "attack", None)?;
        Ok(())
    };
    match kind {
        // Sleeping past the time limit, flooding the log, a result too large, the stack.
        0 => in_hostile(http, json!({"sleep_ms": 60_000}), 502),
        1 => in_hostile(http, json!({"log_lines": 50_000, "line_bytes": 40}), 200),
        2 => in_hostile(http, json!({"result_bytes": 8 << 20}), 502),
        3 => in_hostile(http, json!({"recurse": 10_000_000}), 502),
        // Reading outside the grant: refused by the sandbox, reported by the action.
        4 => {
            let dir = format!("/h{client}");
            expect(
                &init(
                    http,
                    id,
                    &codes.hostile,
                    json!({"namespace": SOAK_NAMESPACE, "annotations": {"dir": dir}}),
                )?,
                200,
                "hostile /init with a grant",
                None,
            )?;
            let ops = json!([{"op": "read", "path": "/etc/passwd"},
                             {"op": "read", "path": format!("{dir}/../../state/cache/key")}]);
            let answer = activate(http, id, json!({"fs": ops}))?;
            expect(&answer, 200, "reads outside the grant", None)?;
            let result: Value = serde_json::from_slice(&answer.body)?;
            if result["fs"]
                .as_array()
                .is_none_or(|ops| ops.iter().any(|op| op.get("ok").is_some()))
            {
                bail!("a read outside the grant succeeded: {result}");
            }
            Ok(())
        }
        // Memory and tables grown without bound.
        5 | 6 => {
            let code = if kind == 5 {
                &codes.memory_hog
            } else {
                &codes.table_hog
            };
            expect(
                &init(http, id, code, timeout.clone())?,
                200,
                "hog /init",
                None,
            )?;
            expect(&activate(http, id, json!({}))?, 502, "hog /run", None)?;
            Ok(())
        }
        // What a web page or a confused client sends: refused before anything happens.
        7 => {
            let text_plain = raw(
                addr,
                &format!(
                    "POST /{id}/init HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                ),
            )?;
            let rebinding = raw(
                addr,
                &format!(
                    "POST /{id}/init HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                ),
            )?;
            if text_plain != 415 || rebinding != 403 {
                bail!("a text/plain body got {text_plain}, a foreign Host {rebinding}");
            }
            Ok(())
        }
        // Slow clients: connections that send half a header and hold it for a second.
        8 => {
            let held: Vec<TcpStream> = (0..20)
                .filter_map(|_| {
                    let mut stream = TcpStream::connect(addr).ok()?;
                    stream
                        .write_all(b"POST /slow/init HTTP/1.1\r\nHost: ")
                        .ok()?;
                    Some(stream)
                })
                .collect();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                drop(held);
            });
            Ok(())
        }
        // Filling a namespace's quota: four times its size, in 1 MiB files, into the client's
        // own directory (so no other filler truncates what it wrote).
        9 => {
            let dir = format!("/fill/c{client}");
            let made = init(
                http,
                id,
                &codes.hostile,
                json!({"namespace": FILLER_NAMESPACE, "annotations": {"dir": dir},
                       "limits": {"timeout": 20_000}}),
            )?;
            // A client whose directory the other fillers' files left no room for is refused
            // its grant, as the full namespace must refuse it.
            if made.status == 502 && String::from_utf8_lossy(&made.body).contains(NO_SPACE) {
                tally.quota_errors.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            expect(&made, 200, "filler /init", None)?;
            let files = 4 * FILLER_QUOTA_MB;
            let fill = json!({"fill": {"dir": dir, "files": files, "bytes": 1 << 20}});
            let answer = activate(http, id, fill)?;
            expect(&answer, 200, "filler /run", None)?;
            let result: Value = serde_json::from_slice(&answer.body)?;
            // wasi-libc's ENOSPC and EDQUOT.
            if ![json!(51), json!(19)].contains(&result["errno"]) {
                bail!("a filler wrote {files} MiB into a {FILLER_QUOTA_MB} MiB quota: {result}");
            }
            tally.quota_errors.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        // Garbage code and an /init raced by a /destroy.
        _ => {
            let bad = init(http, id, &b64(b"PK\x05\x06garbage"), json!({}))?;
            expect(&bad, 502, "garbage code", None)?;
            let racer = {
                let id = id.to_owned();
                std::thread::spawn(move || -> anyhow::Result<()> {
                    destroy(&mut Client::new(addr, ConnMode::New), &id)
                })
            };
            let raced = init(http, id, &codes.echo, json!({}))?;
            racer
                .join()
                .map_err(|_| anyhow::anyhow!("racer panicked"))??;
            if ![200, 404].contains(&raced.status) {
                bail!("/init raced by /destroy: {} {}", raced.status, raced.text());
            }
            Ok(())
        }
    }
}

/// Sends a raw request and returns the status.
fn raw(addr: std::net::SocketAddr, request: &str) -> anyhow::Result<u16> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.write_all(request.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status in {answer:?}"))
}

fn open_fds(pid: u32) -> anyhow::Result<u64> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64)
}
