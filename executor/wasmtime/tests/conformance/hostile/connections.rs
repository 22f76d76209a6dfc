//! Hostile clients of the API itself: connections that send half a header and wait, more of
//! them than the executor has descriptors, bodies sent where none is read, and answers given
//! before a body was read. The invoker's /init and /run are still served, and a kept-alive
//! connection never breaks under the client's next request.

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::harness::{Executor, action, b64, behind_launcher, parse_response};

/// Descriptors a connection thread's own runtime holds (`DESCRIPTORS_PER_THREAD` in
/// `connection_threads.rs`).
const RUNTIME_DESCRIPTORS: usize = 4;

/// Opens `count` connections that each send half a request header, and holds them.
fn slow_clients(ex: &Executor, count: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        // Past the executor's descriptors the kernel's backlog still takes connections.
        let Ok(mut stream) = TcpStream::connect_timeout(&ex.addr, Duration::from_secs(2)) else {
            continue;
        };
        let _ = stream.write_all(b"POST /slow/init HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-");
        held.push(stream);
    }
    held
}

/// The invoker's cold start, timed: /init and /run of `echo` on fresh connections.
fn invoker_cold_start(ex: &Executor, id: &str) -> Duration {
    let started = Instant::now();
    ex.init_action(id, "echo");
    let out = ex.run(id, json!({"hello": id})).expect(200).json();
    assert_eq!(out["hello"], id);
    started.elapsed()
}

#[test]
fn slow_clients_beyond_the_connection_cap_do_not_starve_the_invoker() {
    let ex = Executor::start_with(&["--max-connections", "64", "--header-timeout-ms", "3000"]);
    let fds_before = ex.open_fds();
    let held = slow_clients(&ex, 300);
    let took = invoker_cold_start(&ex, "through");
    eprintln!("300 slow connections against a cap of 64: the invoker's /init + /run took {took:?}");
    assert!(
        took < Duration::from_secs(10),
        "the invoker was not served: {took:?}"
    );
    // Each connection thread (the pool builds') holds its runtime's descriptors too.
    let fds = ex.open_fds();
    let threads = ex.gauge("connection_threads");
    let runtimes = threads as usize * RUNTIME_DESCRIPTORS;
    assert!(
        fds <= fds_before + 64 + 8 + runtimes,
        "connections are capped: {fds} descriptors open, {fds_before} before, {threads} connection threads"
    );
    // A slow client that is still held is closed at the header timeout.
    let mut last = held.into_iter().last().expect("connections were made");
    last.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 256];
    let closed = match last.read(&mut buf) {
        // Closed, or answered and then closed.
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    assert!(
        closed,
        "a half-sent header held its connection past the timeout"
    );
    ex.assert_healthy();
}

#[test]
fn slow_clients_beyond_the_descriptor_limit_do_not_starve_the_invoker() {
    if behind_launcher() {
        // The suite's launcher starts the executor; this test needs its own (prlimit).
        return;
    }
    // 256 descriptors, soft and hard, so the default cap is 128 connections.
    let ex = Executor::start_launched(&["prlimit", "--nofile=256:256", "--"], &[]);
    let held = slow_clients(&ex, 400);
    let took = invoker_cold_start(&ex, "limited");
    eprintln!(
        "{} slow connections against 256 descriptors: the invoker's /init + /run took {took:?}",
        held.len()
    );
    assert!(
        took < Duration::from_secs(10),
        "the invoker was not served: {took:?}"
    );
    assert!(
        ex.open_fds() < 256,
        "{} descriptors open of 256",
        ex.open_fds()
    );
    drop(held);
    ex.assert_healthy();
}

#[test]
fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    if behind_launcher() {
        return;
    }
    let ex = Executor::start_launched(&["prlimit", "--nofile=64:4096", "--"], &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", ex.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_owned();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers, ["4096", "4096"], "{line}");
}

/// Sends `requests` (raw HTTP/1.1) on one kept-alive connection and reads each answer.
fn on_one_connection(ex: &Executor, requests: &[String]) -> Vec<u16> {
    let mut stream = TcpStream::connect(ex.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut statuses = Vec::new();
    for request in requests {
        stream.write_all(request.as_bytes()).unwrap_or_else(|e| {
            panic!("request {} of {}: {e}", statuses.len() + 1, requests.len())
        });
        statuses.push(read_one_answer(&mut stream));
    }
    statuses
}

/// Reads exactly one answer (head and Content-Length body) from a kept-alive connection.
fn read_one_answer(stream: &mut TcpStream) -> u16 {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed mid-answer");
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("every answer carries Content-Length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    raw.extend_from_slice(&body);
    parse_response(&raw).status
}

#[test]
fn bodies_sent_where_none_is_read_never_break_a_kept_alive_connection() {
    let ex = Executor::start();
    ex.init_action("kept", "echo");
    let host = ex.addr.to_string();
    let with_body = |method: &str, path: &str, body: &str| {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let body = json!({"unexpected": "x".repeat(2000)}).to_string();
    let mut requests = Vec::new();
    for i in 0..50 {
        let id = format!("gone-{i}");
        requests.push(with_body("POST", &format!("/{id}/destroy"), &body));
        requests.push(with_body("GET", "/health", &body));
        requests.push(with_body("GET", "/kept/logs", &body));
        requests.push(with_body(
            "POST",
            "/kept/run",
            &json!({"value": {"i": i}}).to_string(),
        ));
    }
    let statuses = on_one_connection(&ex, &requests);
    assert_eq!(statuses.len(), 200);
    for (i, status) in statuses.iter().enumerate() {
        let expected = if i % 4 == 0 { 404 } else { 200 };
        assert_eq!(*status, expected, "request {i}");
    }
    ex.assert_healthy();
}

#[test]
fn an_answer_given_before_the_body_was_read_closes_the_connection() {
    let ex = Executor::start_with(&["--max-body-mb", "1"]);
    let code = b64(&action("echo"));
    let init = json!({"value": {"name": "x", "binary": true, "code": code}}).to_string();
    let host = ex.addr.to_string();
    // A refused Host: the guard answers 403 before the body is read.
    for (headers, status) in [
        (
            "Host: evil.example\r\nContent-Type: application/json\r\n".to_owned(),
            403,
        ),
        (format!("Host: {host}\r\nContent-Type: text/plain\r\n"), 415),
    ] {
        let mut stream = TcpStream::connect(ex.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let request = format!(
            "POST /x/init HTTP/1.1\r\n{headers}Content-Length: {}\r\n\r\n{init}",
            init.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let answer = parse_response(&raw);
        assert_eq!(answer.status, status);
        assert_eq!(
            answer.header("connection"),
            Some("close"),
            "the client is told not to send more on this connection"
        );
    }
    // A body larger than the route takes: 413, the connection closed.
    let r = ex.post(
        "/x/destroy",
        &json!({"pad": "y".repeat(100_000)}).to_string(),
    );
    r.expect(413);
    assert_eq!(r.header("connection"), Some("close"));
    ex.assert_healthy();
}

#[test]
fn a_body_that_trickles_in_is_cut_off() {
    let ex = Executor::start_with(&["--header-timeout-ms", "1000", "--body-min-rate-kb", "1"]);
    let mut stream = TcpStream::connect(ex.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /t/run HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{",
        ex.addr
    );
    stream.write_all(head.as_bytes()).unwrap();
    // 1000 bytes at 1 KiB/s may take 1 s plus the 1 s grace; none more arrive.
    let started = Instant::now();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let answer = parse_response(&raw);
    assert_eq!(answer.status, 408, "{}", answer.text());
    assert!(started.elapsed() < Duration::from_secs(20));
    ex.assert_healthy();
}
