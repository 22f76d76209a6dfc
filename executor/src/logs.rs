//! Activation output: capture of a guest's stdout/stderr as timestamped lines (bounded), and
//! each container's pending log lines in docker's json-file format, sentinel-framed.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use serde::Serialize;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// The line OpenWhisk runtimes write on both streams after every activation.
pub const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// Longest single line kept in memory (a result line can be as large as a response payload).
const MAX_LINE_BYTES: usize = 16 << 20;

/// Pending log bytes a container keeps when nobody collects them; the oldest go first.
const MAX_PENDING_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone)]
pub struct CapturedLine {
    pub stream: Stream,
    pub text: String,
    pub time: OffsetDateTime,
    seq: u64,
}

/// Collects what one activation writes, in the order it was written.
#[derive(Debug)]
pub struct OutputCapture {
    inner: Mutex<CaptureState>,
}

#[derive(Debug)]
struct CaptureState {
    lines: Vec<CapturedLine>,
    partial: [Vec<u8>; 2],
    kept_bytes: usize,
    limit_bytes: usize,
    truncated: bool,
    next_seq: u64,
    /// The last non-empty stdout line, kept even past the log limit: it is the result.
    last_stdout: Option<CapturedLine>,
}

/// What an activation wrote, after it ended.
#[derive(Debug)]
pub struct Captured {
    pub lines: Vec<CapturedLine>,
    pub truncated_at: Option<usize>,
    last_stdout: Option<CapturedLine>,
}

impl OutputCapture {
    pub fn new(limit_bytes: usize) -> Arc<Self> {
        Arc::new(OutputCapture {
            inner: Mutex::new(CaptureState {
                lines: Vec::new(),
                partial: [Vec::new(), Vec::new()],
                kept_bytes: 0,
                limit_bytes,
                truncated: false,
                next_seq: 0,
                last_stdout: None,
            }),
        })
    }

    /// Appends bytes a guest wrote to `stream`; complete lines are stamped now.
    pub fn write(&self, stream: Stream, mut bytes: &[u8]) {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(newline) = bytes.iter().position(|&b| b == b'\n') {
            state.push_partial(stream, &bytes[..newline]);
            state.complete_line(stream);
            bytes = &bytes[newline + 1..];
        }
        state.push_partial(stream, bytes);
    }

    /// Ends the capture: unterminated output becomes a last line.
    pub fn finish(&self) -> Captured {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for stream in [Stream::Stdout, Stream::Stderr] {
            if !state.partial[stream as usize].is_empty() {
                state.complete_line(stream);
            }
        }
        Captured {
            lines: std::mem::take(&mut state.lines),
            truncated_at: state.truncated.then_some(state.limit_bytes),
            last_stdout: state.last_stdout.take(),
        }
    }
}

impl CaptureState {
    fn push_partial(&mut self, stream: Stream, bytes: &[u8]) {
        let partial = &mut self.partial[stream as usize];
        let room = MAX_LINE_BYTES.saturating_sub(partial.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn complete_line(&mut self, stream: Stream) {
        let raw = std::mem::take(&mut self.partial[stream as usize]);
        let text = String::from_utf8_lossy(raw.strip_suffix(b"\r").unwrap_or(&raw)).into_owned();
        let line = CapturedLine {
            stream,
            text,
            time: OffsetDateTime::now_utc(),
            seq: self.next_seq,
        };
        self.next_seq += 1;
        if stream == Stream::Stdout && !line.text.trim().is_empty() {
            self.last_stdout = Some(line.clone());
        }
        if self.kept_bytes + line.text.len() > self.limit_bytes {
            self.truncated = true;
            return;
        }
        self.kept_bytes += line.text.len();
        self.lines.push(line);
    }
}

impl Captured {
    /// The result line: the last non-empty stdout line.
    pub fn result_line(&self) -> Option<&str> {
        self.last_stdout.as_ref().map(|l| l.text.as_str())
    }

    /// Removes the result line from the logs once it has been taken as the result.
    pub fn drop_result_line(&mut self) {
        if let Some(last) = self.last_stdout.take() {
            self.lines.retain(|l| l.seq != last.seq);
        }
    }

    /// Adds lines (e.g. a trap's backtrace) to the logs of this activation.
    pub fn push_stderr(&mut self, text: &str) {
        for line in text.lines() {
            self.lines.push(CapturedLine {
                stream: Stream::Stderr,
                text: line.to_owned(),
                time: OffsetDateTime::now_utc(),
                seq: u64::MAX,
            });
        }
    }
}

/// One line of docker's json-file log format, as OpenWhisk's log store parses it.
#[derive(Serialize)]
struct JsonFileLine<'a> {
    log: String,
    stream: Stream,
    time: &'a str,
}

fn json_file_line(stream: Stream, text: &str, time: OffsetDateTime) -> String {
    let time = time.format(&Rfc3339).unwrap_or_default();
    serde_json::to_string(&JsonFileLine {
        log: format!("{text}\n"),
        stream,
        time: &time,
    })
    .expect("log lines serialize")
}

/// A container's log lines not yet collected by `GET /{id}/logs`.
#[derive(Debug, Default)]
pub struct PendingLogs {
    inner: Mutex<PendingState>,
}

#[derive(Debug, Default)]
struct PendingState {
    lines: VecDeque<String>,
    bytes: usize,
}

impl PendingLogs {
    /// Appends one activation's lines, a truncation notice if needed, and the sentinels.
    pub fn append_activation(&self, captured: &Captured) {
        let mut formatted: Vec<String> = captured
            .lines
            .iter()
            .map(|l| json_file_line(l.stream, &l.text, l.time))
            .collect();
        let now = OffsetDateTime::now_utc();
        if let Some(limit) = captured.truncated_at {
            formatted.push(json_file_line(
                Stream::Stderr,
                &format!("Logs were truncated because the total bytes size exceeds the limit of {limit} bytes."),
                now,
            ));
        }
        formatted.push(json_file_line(Stream::Stdout, SENTINEL, now));
        formatted.push(json_file_line(Stream::Stderr, SENTINEL, now));

        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for line in formatted {
            state.bytes += line.len() + 1;
            state.lines.push_back(line);
        }
        while state.bytes > MAX_PENDING_BYTES {
            match state.lines.pop_front() {
                Some(old) => state.bytes -= old.len() + 1,
                None => break,
            }
        }
    }

    /// Takes every pending line, newline-terminated.
    pub fn drain(&self) -> String {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::with_capacity(state.bytes);
        for line in state.lines.drain(..) {
            out.push_str(&line);
            out.push('\n');
        }
        state.bytes = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_line_is_the_last_non_empty_stdout_line() {
        let capture = OutputCapture::new(1 << 20);
        capture.write(Stream::Stdout, b"log one\n");
        capture.write(Stream::Stderr, b"err one\npartial ");
        capture.write(Stream::Stdout, b"{\"a\":1}\n\n");
        capture.write(Stream::Stderr, b"end");
        let mut captured = capture.finish();
        assert_eq!(captured.result_line(), Some("{\"a\":1}"));
        captured.drop_result_line();
        let texts: Vec<_> = captured.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["log one", "err one", "", "partial end"]);
    }

    #[test]
    fn logs_past_the_limit_are_dropped_but_the_result_survives() {
        let capture = OutputCapture::new(10);
        capture.write(Stream::Stdout, b"0123456789abcdef\n{\"ok\":true}\n");
        let mut captured = capture.finish();
        assert_eq!(captured.truncated_at, Some(10));
        assert_eq!(captured.result_line(), Some("{\"ok\":true}"));
        captured.drop_result_line();
        assert!(captured.lines.is_empty());
    }

    #[test]
    fn pending_logs_are_json_file_lines_with_sentinels() {
        let capture = OutputCapture::new(1 << 20);
        capture.write(Stream::Stderr, b"hello\n");
        let pending = PendingLogs::default();
        pending.append_activation(&capture.finish());
        let text = pending.drain();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["log"], "hello\n");
        assert_eq!(lines[0]["stream"], "stderr");
        assert_eq!(lines[1]["log"], format!("{SENTINEL}\n"));
        assert_eq!(lines[1]["stream"], "stdout");
        assert_eq!(lines[2]["stream"], "stderr");
        assert!(pending.drain().is_empty());
    }
}
