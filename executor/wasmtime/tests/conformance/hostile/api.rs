//! The API against web pages (cross-site requests, DNS rebinding) and local processes (the
//! bearer token, the Unix-domain socket): only the invoker, or whoever holds the token, may
//! install and run code.

use std::{os::unix::net::UnixStream, time::Duration};

use serde_json::json;

use crate::harness::{Executor, ScratchDir, action, b64, exchange};

fn init_body(id: &str) -> Vec<u8> {
    json!({"value": {"name": id, "main": "main", "binary": true, "code": b64(&action("echo"))}})
        .to_string()
        .into_bytes()
}

#[test]
fn web_pages_cannot_install_or_run_code() {
    let ex = Executor::start();
    let host = ex.addr.to_string();
    let body = init_body("page");
    // What a page can send across origins without a preflight: text/plain or form bodies.
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let r = ex
            .raw_request(
                "POST",
                "/page/init",
                &[("Host", &host), ("Content-Type", content_type)],
                &body,
            )
            .unwrap();
        assert_eq!(
            r.expect(415).error(),
            "request bodies must be JSON (Content-Type: application/json)"
        );
    }
    // Any request a browser makes carries Origin or Sec-Fetch-*.
    for browser in [
        ("Origin", "http://evil.example"),
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", "no-cors"),
    ] {
        let r = ex
            .raw_request(
                "POST",
                "/page/init",
                &[
                    ("Host", &host),
                    ("Content-Type", "application/json"),
                    browser,
                ],
                &body,
            )
            .unwrap();
        assert_eq!(
            r.expect(403).error(),
            "requests from web browsers are not accepted"
        );
        let r = ex
            .raw_request("GET", "/page/logs", &[("Host", &host), browser], b"")
            .unwrap();
        r.expect(403);
    }
    // DNS rebinding: the page's own name resolving to loopback.
    let r = ex
        .raw_request(
            "POST",
            "/page/init",
            &[
                ("Host", "attacker.example:9000"),
                ("Content-Type", "application/json"),
            ],
            &body,
        )
        .unwrap();
    assert!(
        r.expect(403)
            .error()
            .contains("\"attacker.example\" is not served here"),
        "{}",
        r.text()
    );
    assert_eq!(
        ex.get("/containers").expect(200).json(),
        json!({"containers": []})
    );
    // The invoker's own request still works.
    ex.post("/page/init", std::str::from_utf8(&body).unwrap())
        .expect(200);
    assert_eq!(
        ex.run("page", json!({"a": 1})).expect(200).json(),
        json!({"a": 1})
    );
}

#[test]
fn with_a_token_nothing_but_health_answers_without_it() {
    let dir = ScratchDir::new("token");
    let file = dir.0.join("token");
    std::fs::write(&file, "correct-horse-battery-staple-42\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ex = Executor::start_with(&["--auth-token-file", file.to_str().unwrap()]);
    let host = ex.addr.to_string();
    let json = ("Content-Type", "application/json");
    let body = init_body("t");
    for auth in [None, Some("Bearer wrong-token"), Some("Basic Y29ycmVjdA==")] {
        let mut headers = vec![("Host", host.as_str()), json];
        if let Some(auth) = auth {
            headers.push(("Authorization", auth));
        }
        let r = ex.raw_request("POST", "/t/init", &headers, &body).unwrap();
        assert!(
            r.expect(401).error().contains("bearer token"),
            "{}",
            r.text()
        );
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        ex.raw_request("GET", "/containers", &headers, b"")
            .unwrap()
            .expect(401);
        ex.raw_request("GET", "/metrics", &headers, b"")
            .unwrap()
            .expect(401);
    }
    // Liveness probes need no secret.
    ex.raw_request("GET", "/health", &[("Host", &host)], b"")
        .unwrap()
        .expect(200);
    // The harness sends the token.
    ex.init_action("t", "echo");
    assert_eq!(
        ex.run("t", json!({"k": 2})).expect(200).json(),
        json!({"k": 2})
    );
}

#[test]
fn a_token_file_other_users_can_read_is_refused() {
    let dir = ScratchDir::new("token");
    let file = dir.0.join("token");
    std::fs::write(&file, "correct-horse-battery-staple-42").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut ex = Executor::spawn(&["--auth-token-file", file.to_str().unwrap()]);
    let status = ex
        .exit_status(Duration::from_secs(20))
        .expect("the executor refuses to start");
    assert!(!status.success());
}

#[test]
fn beyond_loopback_only_with_a_token_or_the_operators_insistence() {
    let mut ex = Executor::spawn(&["--listen", "0.0.0.0:0"]);
    let status = ex
        .exit_status(Duration::from_secs(20))
        .expect("the executor refuses to start");
    assert!(!status.success());
    let mut ex = Executor::spawn(&["--listen", "0.0.0.0:0", "--insecure-listen"]);
    assert!(
        ex.exit_status(Duration::from_secs(2)).is_none(),
        "it starts when told"
    );
}

#[test]
fn a_unix_socket_is_private_to_the_executors_user() {
    let dir = ScratchDir::new("socket");
    let socket = dir.0.join("api.sock");
    let ex = Executor::spawn(&["--listen", &format!("unix:{}", socket.display())]);
    let connect = || {
        for _ in 0..1000 {
            if let Ok(stream) = UnixStream::connect(&socket) {
                stream
                    .set_read_timeout(Some(Duration::from_secs(60)))
                    .unwrap();
                return stream;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no socket at {}", socket.display());
    };
    let json = [("Content-Type", "application/json")];
    let r = exchange(connect(), "POST", "/u/init", &json, &init_body("u")).unwrap();
    r.expect(200);
    let r = exchange(
        connect(),
        "POST",
        "/u/run",
        &json,
        br#"{"value":{"via":"socket"}}"#,
    )
    .unwrap();
    assert_eq!(r.expect(200).json(), json!({"via": "socket"}));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the executor's user may connect");
    drop(ex);
}
