//! What travels on the control channel and how it is framed: the typed messages ([`Message`],
//! the [`Hello`] with its [`SideInfo`]) and their length-prefixed JSON frames.

use serde::{Deserialize, Serialize};

use crate::peer_text::{is_unsafe_character, printable, PEER_TEXT_CHARS};
use crate::protocol::MAX_MESSAGE_BYTES;
use gdrperf_verbs::{Endpoint, RemoteBuffer};

/// Bytes of a random nonce.
pub const NONCE_BYTES: usize = 32;
/// Bytes of an HMAC-SHA256 tag.
pub const AUTH_TAG_BYTES: usize = 32;

/// A random number used once: one per side per connection.
pub type Nonce = [u8; NONCE_BYTES];

/// The first message each side sends: who it is, what it runs, how to reach its QPs and memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub gdrperf_version: String,
    pub host: String,
    /// The parameters both sides must share, as a JSON object, compared field by field.
    pub parameters: serde_json::Value,
    /// Facts about this side that may differ from the peer's (device, memory kind, MTU...).
    pub side: SideInfo,
    pub endpoints: Vec<Endpoint>,
    pub buffers: Vec<RemoteBuffer>,
    /// This side's memory placements for the run ("host", "cuda:0", ...), in run order: the
    /// sides pair them up round by round (or lane by lane with `--concurrent`).
    #[serde(default)]
    pub placements: Vec<String>,
    /// Which lane of a `--concurrent` run this connection carries (0 otherwise).
    #[serde(default)]
    pub lane: u32,
    /// `-R`, from a server: the rdma_cm port it listens on for these QPs (`None` otherwise).
    #[serde(default)]
    pub rdma_cm_port: Option<u16>,
    /// `-R`, from a server: the secret its client puts in each rdma_cm connection request, so
    /// that the server accepts no one else's (`gdrperf_verbs::rdma_cm_admission`). Sent only to
    /// a client that passed the challenge and the terms, as the keys are.
    #[serde(default)]
    pub rdma_cm_secret: Option<gdrperf_verbs::CmSecret>,
}

/// Per-side facts: shown in the run header and result rows, never required to match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    pub device: String,
    pub port: u8,
    pub active_mtu: u32,
    pub memory: crate::memory_kind::MemoryKind,
    /// The GPU and registration path when `memory` is GPU memory.
    #[serde(default)]
    pub gpu: Option<String>,
    /// This side's path facts (port, PCIe links, GPU-NIC path, ACS, IOMMU, NUMA), so that the
    /// peer's rows know both ends' ceiling and causes (`gdrperf-ceiling`). Absent from an older peer.
    #[serde(default)]
    pub path: Option<gdrperf_ceiling::EndFacts>,
}

/// Everything that travels on the control channel, in the order it does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// Server -> client, first: our version, a fresh random nonce, and whether we hold a token.
    Challenge {
        version: u32,
        nonce: Nonce,
        token_required: bool,
    },
    /// Client -> server: its version, its own nonce, and with a token the HMAC proving it.
    Proof {
        version: u32,
        nonce: Nonce,
        tag: Option<[u8; AUTH_TAG_BYTES]>,
    },
    /// Server -> client: the proof holds; with a token, the server's own HMAC in return.
    Accepted {
        tag: Option<[u8; AUTH_TAG_BYTES]>,
    },
    /// Both ways, before the hellos: the run parameters and the lane, checked before any key
    /// (the hello) is sent.
    Terms {
        parameters: serde_json::Value,
        lane: u32,
    },
    Hello(Box<Hello>),
    /// Client -> server: get ready for this message size (clear buffers, post receives).
    StartSize {
        size: u64,
    },
    /// Server -> client: ready; the client may start.
    Ready,
    /// Server -> client, with `-R`, after the hellos: its rdma_cm listener is open (it opens only
    /// for an admitted client); the client may send its connection requests.
    RdmaCmListening,
    /// Client -> server: done with this size; here is what I measured (JSON row) if anything.
    SizeDone {
        size: u64,
        report: Option<serde_json::Value>,
    },
    /// Server -> client: the server's view of the size: data check result and its own numbers.
    SizeResult {
        size: u64,
        validation_error: Option<String>,
        report: Option<serde_json::Value>,
    },
    /// Either side: I failed, here is why (so the peer can exit with that message, not a hang).
    Failed {
        message: String,
    },
    /// Client -> server: the sweep of one placement is over; both sides set up the next round's
    /// resources and swap hellos again.
    NextPlacement {
        round: u32,
    },
    /// Client -> server: the sweep is over.
    Goodbye,
}

impl Message {
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Message::Challenge { .. } => "Challenge",
            Message::Proof { .. } => "Proof",
            Message::Accepted { .. } => "Accepted",
            Message::Terms { .. } => "Terms",
            Message::Hello(_) => "Hello",
            Message::StartSize { .. } => "StartSize",
            Message::Ready => "Ready",
            Message::RdmaCmListening => "RdmaCmListening",
            Message::SizeDone { .. } => "SizeDone",
            Message::SizeResult { .. } => "SizeResult",
            Message::Failed { .. } => "Failed",
            Message::NextPlacement { .. } => "NextPlacement",
            Message::Goodbye => "Goodbye",
        }
    }
}

/// Encodes a message as length-prefixed JSON.
pub fn encode(message: &Message) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("messages are plain data and always serialise");
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Reads the 4-byte length prefix of a frame and refuses, before anything is allocated, a body
/// longer than [`MAX_MESSAGE_BYTES`].
pub fn frame_length(prefix: [u8; 4]) -> std::result::Result<usize, usize> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_MESSAGE_BYTES {
        Err(len)
    } else {
        Ok(len)
    }
}

/// Why a frame did not decode. Its message may quote the peer's bytes (serde_json names an
/// unknown variant), so the channel shows it only through [`printable`].
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The body is no message of this protocol version: serde_json's reason.
    #[error("{0}")]
    Json(#[from] serde_json::Error),

    /// The length prefix announces more than any message may be.
    #[error("a {len}-byte message is over the limit of {limit}")]
    TooLarge { len: usize, limit: usize },
}

/// Decodes the body of one frame (without its length prefix).
pub fn decode_body(body: &[u8]) -> std::result::Result<Message, DecodeError> {
    let mut message: Message = serde_json::from_slice(body)?;
    clean_peer_text(&mut message);
    Ok(message)
}

/// Every string a peer sent, made harmless once, where it is decoded: control, bidirectional and
/// format characters (ESC, U+202E included) escaped and each string cut at [`PEER_TEXT_CHARS`]
/// (see [`printable`]), so that whatever later prints or writes a peer's host, device, placement,
/// parameter, reason or path facts (terms, watch, sweep, run header, each row's note, the
/// ceiling's causes, FAIL lines, interrupt, configuration errors, CSV and JSON) holds only clean
/// text.
fn clean_peer_text(message: &mut Message) {
    let clean = |text: &mut String| {
        // The slack lets a cut text (its first characters plus "... (N more characters cut)")
        // pass unchanged when it travels again: cleaning is a fixed point.
        if text.chars().any(is_unsafe_character) || text.chars().nth(PEER_TEXT_CHARS + 64).is_some() {
            *text = printable(text);
        }
    };
    match message {
        Message::Hello(hello) => {
            clean(&mut hello.gdrperf_version);
            clean(&mut hello.host);
            clean(&mut hello.side.device);
            hello.side.gpu.iter_mut().for_each(clean);
            hello.placements.iter_mut().for_each(clean);
            clean_json(&mut hello.parameters, &clean);
            clean_path_facts(&mut hello.side.path, &clean);
        }
        Message::Terms { parameters, .. } => clean_json(parameters, &clean),
        Message::SizeDone { report, .. } => report.iter_mut().for_each(|report| clean_json(report, &clean)),
        Message::SizeResult { validation_error, report, .. } => {
            validation_error.iter_mut().for_each(clean);
            report.iter_mut().for_each(|report| clean_json(report, &clean));
        }
        Message::Failed { message } => clean(message),
        Message::Challenge { .. }
        | Message::Proof { .. }
        | Message::Accepted { .. }
        | Message::StartSize { .. }
        | Message::Ready
        | Message::RdmaCmListening
        | Message::NextPlacement { .. }
        | Message::Goodbye => {}
    }
}

/// The path facts hold free text (software device, port rate, ACS and IOMMU lists, findings'
/// device, evidence and fix): each string is cleaned through the facts' JSON form, so that a
/// field added later is covered too. Facts that no longer read back after cleaning (a string
/// that was an enum's name and held a control character never decoded in the first place) are
/// dropped: the rows then say the peer's end is unknown.
fn clean_path_facts(path: &mut Option<gdrperf_ceiling::EndFacts>, clean: &dyn Fn(&mut String)) {
    let Some(facts) = path.take() else { return };
    let Ok(mut value) = serde_json::to_value(&facts) else { return };
    clean_json(&mut value, clean);
    *path = serde_json::from_value(value).ok();
}

/// Cleans every string of a JSON value, keys included.
fn clean_json(value: &mut serde_json::Value, clean: &dyn Fn(&mut String)) {
    match value {
        serde_json::Value::String(text) => clean(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|item| clean_json(item, clean)),
        serde_json::Value::Object(map) => {
            let entries = std::mem::take(map);
            for (mut key, mut item) in entries {
                clean(&mut key);
                clean_json(&mut item, clean);
                map.insert(key, item);
            }
        }
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
    }
}

/// Decodes one whole frame (prefix and body) from the start of `bytes`: the message and the
/// bytes it took, `Ok(None)` when `bytes` holds only part of a frame. The same checks as
/// [`Control::receive`](crate::Control::receive), for callers that look at bytes without consuming them.
pub fn decode_frame(bytes: &[u8]) -> std::result::Result<Option<(Message, usize)>, DecodeError> {
    let Some(&[a, b, c, d]) = bytes.get(..4) else { return Ok(None) };
    let len =
        frame_length([a, b, c, d]).map_err(|len| DecodeError::TooLarge { len, limit: MAX_MESSAGE_BYTES })?;
    match bytes.get(4..4 + len) {
        None => Ok(None),
        Some(body) => decode_body(body).map(|message| Some((message, 4 + len))),
    }
}
