//! Activation output: capture of a guest's stdout/stderr as timestamped lines (bounded), and
//! each container's pending log lines, sentinel-framed, written in docker's json-file format
//! when the invoker collects them (an activation whose logs nobody reads formats nothing).
//!
//! Both are bounded in memory, not just in text: every line costs its text plus [`LINE_COST`]
//! bytes against the activation's log limit (so ten million empty lines fill the limit as
//! surely as ten megabytes of text), and the pending lines of all containers share one
//! [`LogBudget`] at the same price.

use std::{
    borrow::Cow,
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use serde::Serialize;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// The line OpenWhisk runtimes write on both streams after every activation.
pub const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// What a guest line that contains the sentinel shows instead of it.
pub const SENTINEL_STAND_IN: &str = "[activation sentinel]";

/// What a captured line costs beyond its text: its timestamp, stream and bookkeeping in memory,
/// and the framing of its json-file form.
pub const LINE_COST: usize = 64;

/// Pending log bytes one container keeps when nobody collects them; the oldest go first.
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

impl CapturedLine {
    /// A line written before this process (kept with an action's state), stamped now.
    pub fn restored(stream: Stream, text: String) -> Self {
        CapturedLine {
            stream,
            text,
            time: OffsetDateTime::now_utc(),
            seq: u64::MAX,
        }
    }
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
    /// Bytes written to each stream's current line, also past `max_line_bytes`.
    partial_written: [usize; 2],
    kept_bytes: usize,
    limit_bytes: usize,
    /// The longest line kept (the result line included).
    max_line_bytes: usize,
    /// What was written of the last non-empty stdout line, when that was cut.
    result_overflow: Option<usize>,
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
    /// When the result line was longer than lines may be: its length and that limit.
    pub result_overflow: Option<(usize, usize)>,
}

impl OutputCapture {
    /// A capture keeping `limit_bytes` of log lines (each line costs its text plus
    /// [`LINE_COST`]), no line longer than `max_line_bytes`.
    pub fn new(limit_bytes: usize, max_line_bytes: usize) -> Arc<Self> {
        Arc::new(OutputCapture {
            inner: Mutex::new(CaptureState {
                lines: Vec::new(),
                partial: [Vec::new(), Vec::new()],
                partial_written: [0, 0],
                kept_bytes: 0,
                limit_bytes,
                max_line_bytes,
                result_overflow: None,
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
            result_overflow: state
                .result_overflow
                .map(|written| (written, state.max_line_bytes)),
        }
    }
}

impl CaptureState {
    fn push_partial(&mut self, stream: Stream, bytes: &[u8]) {
        self.partial_written[stream as usize] += bytes.len();
        let partial = &mut self.partial[stream as usize];
        let room = self.max_line_bytes.saturating_sub(partial.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn complete_line(&mut self, stream: Stream) {
        let raw = std::mem::take(&mut self.partial[stream as usize]);
        let written = std::mem::take(&mut self.partial_written[stream as usize]);
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
            self.result_overflow = (written > self.max_line_bytes).then_some(written);
        }
        let cost = line.text.len() + LINE_COST;
        if self.kept_bytes + cost > self.limit_bytes {
            self.truncated = true;
            return;
        }
        self.kept_bytes += cost;
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

/// The pending-log memory all containers share (`--max-pending-log-mb`).
#[derive(Debug)]
pub struct LogBudget {
    max_bytes: usize,
    used: AtomicUsize,
}

impl LogBudget {
    pub fn new(max_bytes: usize) -> Arc<Self> {
        Arc::new(LogBudget {
            max_bytes,
            used: AtomicUsize::new(0),
        })
    }

    /// Takes `bytes` from the budget if they fit.
    fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + bytes <= self.max_bytes).then_some(used + bytes)
            })
            .is_ok()
    }

    /// Takes `bytes` whether or not they fit (the few lines that end an activation).
    fn take(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::AcqRel);
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    pub fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// A container's log lines not yet collected by `GET /{id}/logs`.
#[derive(Debug)]
pub struct PendingLogs {
    inner: Mutex<PendingState>,
    budget: Arc<LogBudget>,
}

#[derive(Debug, Default)]
struct PendingState {
    lines: VecDeque<PendingLine>,
    /// What the lines cost against the budget.
    bytes: usize,
}

/// A line as the guest wrote it (or the executor's notice), formatted when collected.
#[derive(Debug)]
struct PendingLine {
    stream: Stream,
    text: Cow<'static, str>,
    time: OffsetDateTime,
}

impl PendingLine {
    /// A line the guest wrote, kept with `time`; the sentinel cannot pass (see [`unframed`]).
    fn from_guest(line: CapturedLine, time: OffsetDateTime) -> Self {
        PendingLine {
            stream: line.stream,
            text: Cow::Owned(unframed(line.text)),
            time,
        }
    }

    fn cost(&self) -> usize {
        self.text.len() + LINE_COST
    }
}

/// Written in place of the lines that found no room.
pub const DROPPED_NOTICE: &str =
    "Logs were dropped: the executor holds the uncollected logs of its containers at its limit.";

impl PendingLogs {
    pub fn new(budget: Arc<LogBudget>) -> Self {
        PendingLogs {
            inner: Mutex::new(PendingState::default()),
            budget,
        }
    }

    /// Appends one activation's lines while there is room (making room by dropping this
    /// container's oldest lines first), a notice for what was truncated or dropped, and the
    /// sentinels.
    pub fn append_activation(&self, captured: Captured) {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let dropped = !captured.lines.into_iter().all(|line| {
            let time = line.time;
            self.push(&mut state, PendingLine::from_guest(line, time))
        });
        let time = OffsetDateTime::now_utc();
        let notice = |stream, text| PendingLine { stream, text, time };
        let mut closing = Vec::with_capacity(4);
        if let Some(limit) = captured.truncated_at {
            closing.push(notice(
                Stream::Stderr,
                Cow::Owned(format!(
                    "Logs were truncated because the total bytes size exceeds the limit of {limit} bytes."
                )),
            ));
        }
        if dropped {
            closing.push(notice(Stream::Stderr, Cow::Borrowed(DROPPED_NOTICE)));
        }
        closing.push(notice(Stream::Stdout, Cow::Borrowed(SENTINEL)));
        closing.push(notice(Stream::Stderr, Cow::Borrowed(SENTINEL)));
        for line in closing {
            let cost = line.cost();
            self.budget.take(cost);
            state.bytes += cost;
            state.lines.push_back(line);
        }
    }

    /// Holds what the action's code printed when it was loaded (at this container's /init, or
    /// at the /init that made the snapshot it shares), stamped now: the first activation's
    /// lines follow them, before its sentinels, as in OpenWhisk's runtimes, whose init writes
    /// to the container's log before the first run.
    pub fn hold_init_output(&self, lines: &[CapturedLine]) {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let time = OffsetDateTime::now_utc();
        for line in lines {
            if !self.push(&mut state, PendingLine::from_guest(line.clone(), time)) {
                break;
            }
        }
    }

    /// Appends a line, making room by dropping this container's oldest lines first; false when
    /// there is no room even then (the line is dropped).
    fn push(&self, state: &mut PendingState, line: PendingLine) -> bool {
        let cost = line.cost();
        while state.bytes + cost > MAX_PENDING_BYTES || !self.budget.try_take(cost) {
            let Some(old) = state.lines.pop_front() else {
                return false;
            };
            let freed = old.cost();
            state.bytes -= freed;
            self.budget.give_back(freed);
        }
        state.bytes += cost;
        state.lines.push_back(line);
        true
    }

    /// Takes every pending line as a json-file line, newline-terminated.
    pub fn drain(&self) -> String {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::with_capacity(state.bytes);
        for line in state.lines.drain(..) {
            out.push_str(&json_file_line(line.stream, &line.text, line.time));
            out.push('\n');
        }
        self.budget.give_back(state.bytes);
        state.bytes = 0;
        out
    }
}

/// A guest's line as the invoker may see it: the sentinel, wherever it stands in the line (and
/// however the guest's writes split it; lines are whole here), is replaced by a stand-in, so
/// only the executor can end an activation's logs.
fn unframed(text: String) -> String {
    if text.contains(SENTINEL) {
        text.replace(SENTINEL, SENTINEL_STAND_IN)
    } else {
        text
    }
}

impl Drop for PendingLogs {
    fn drop(&mut self) {
        let state = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        self.budget.give_back(state.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_line_is_the_last_non_empty_stdout_line() {
        let capture = OutputCapture::new(1 << 20, 1 << 20);
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
        let capture = OutputCapture::new(10 + LINE_COST, 1 << 20);
        capture.write(Stream::Stdout, b"0123456789abcdef\n{\"ok\":true}\n");
        let mut captured = capture.finish();
        assert_eq!(captured.truncated_at, Some(10 + LINE_COST));
        assert_eq!(captured.result_line(), Some("{\"ok\":true}"));
        captured.drop_result_line();
        assert!(captured.lines.is_empty());
    }

    #[test]
    fn a_flood_of_empty_lines_is_bounded_like_text() {
        let capture = OutputCapture::new(10 << 20, 1 << 20);
        let flood = vec![b'\n'; 10_000_000];
        capture.write(Stream::Stderr, &flood);
        let captured = capture.finish();
        assert_eq!(captured.lines.len(), (10 << 20) / LINE_COST);
        assert_eq!(captured.truncated_at, Some(10 << 20));
    }

    #[test]
    fn containers_share_one_pending_budget_and_give_it_back() {
        let budget = LogBudget::new(4096);
        let noisy = PendingLogs::new(Arc::clone(&budget));
        let quiet = PendingLogs::new(Arc::clone(&budget));
        let capture = OutputCapture::new(1 << 20, 1 << 20);
        for i in 0..200 {
            capture.write(Stream::Stdout, format!("line {i:04}\n").as_bytes());
        }
        noisy.append_activation(capture.finish());
        // Past the budget the oldest lines of the same container went first.
        let text = noisy.drain();
        assert!(!text.contains("line 0000"), "the oldest lines made room");
        assert!(text.contains("line 0199"), "the newest were kept");
        assert_eq!(budget.used_bytes(), 0, "drained: given back");
        // A container that finds the budget held by another gets a notice instead of lines.
        let capture = OutputCapture::new(1 << 20, 1 << 20);
        capture.write(Stream::Stdout, "x".repeat(3000).as_bytes());
        capture.write(Stream::Stdout, b"\n");
        noisy.append_activation(capture.finish());
        let capture = OutputCapture::new(1 << 20, 1 << 20);
        capture.write(Stream::Stdout, "y".repeat(2000).as_bytes());
        capture.write(Stream::Stdout, b"\n");
        quiet.append_activation(capture.finish());
        let text = quiet.drain();
        assert!(
            text.contains(DROPPED_NOTICE) && !text.contains("yyyy"),
            "{text}"
        );
        assert!(text.contains(SENTINEL));
        drop(noisy);
        assert_eq!(
            budget.used_bytes(),
            0,
            "a destroyed container gives its lines back"
        );
    }

    #[test]
    fn a_guest_cannot_write_the_sentinel() {
        let pending = PendingLogs::new(LogBudget::new(1 << 20));
        let capture = OutputCapture::new(1 << 20, 1 << 20);
        capture.write(Stream::Stdout, b"XXX_THE_END_OF_A_WHI");
        capture.write(Stream::Stdout, b"SK_ACTIVATION_XXX\n");
        capture.write(Stream::Stderr, format!(" {SENTINEL}\r\n").as_bytes());
        capture.write(Stream::Stdout, b"after\n");
        pending.append_activation(capture.finish());
        let lines: Vec<serde_json::Value> = pending
            .drain()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let texts: Vec<&str> = lines.iter().map(|l| l["log"].as_str().unwrap()).collect();
        let framing = texts.iter().filter(|t| t.trim() == SENTINEL).count();
        assert_eq!(
            framing, 2,
            "only the executor's own two sentinels: {texts:?}"
        );
        assert_eq!(texts.len(), 5, "{texts:?}");
        assert!(texts[0].starts_with(SENTINEL_STAND_IN), "{texts:?}");
        assert!(texts[3].trim() == SENTINEL && texts[4].trim() == SENTINEL);
    }

    #[test]
    fn pending_logs_are_json_file_lines_with_sentinels() {
        let capture = OutputCapture::new(1 << 20, 1 << 20);
        capture.write(Stream::Stderr, b"hello\n");
        let pending = PendingLogs::new(LogBudget::new(1 << 20));
        pending.append_activation(capture.finish());
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
