//! Who may take our memory keys: the challenge that opens every control connection.
//!
//! A hello holds the address and rkey of every benchmark buffer, and an rkey is remote write
//! access to that memory for anyone on the fabric. Without a token we still run the challenge
//! (it carries the protocol version, so old peers are named as such), and anyone who can reach
//! the port gets our hello, as with perftest. With a shared token (`--token`, or better
//! `GDRPERF_TOKEN`), the exchange is:
//!
//! ```text
//! server -> client  Challenge { version, server nonce, token_required }
//! client -> server  Proof     { version, client nonce, tag = HMAC-SHA256(token, CLIENT || server nonce || client nonce) }
//! server            checks the tag (constant time); on failure sends Failed and stops, hello unsent
//! server -> client  Accepted  { tag = HMAC-SHA256(token, SERVER || server nonce || client nonce) }
//! client            checks the server's tag; only then do both send their hellos
//! ```
//!
//! The token itself never crosses the network. Fresh random nonces from both sides make an
//! old proof useless on a new connection, and the two labels keep a proof from being reflected
//! back as the other side's. Both sides must agree on whether a token is used: a side holding
//! one refuses a peer without, so that a forgotten `--token` on one host fails loudly instead of
//! running unprotected.
//!
//! What this does not do: encrypt or sign the messages after the handshake. A machine that can
//! sit in the middle of the TCP connection can still read the hellos; the token keeps out peers
//! that merely connect, which is the risk on a shared cluster network.

use std::io::Read;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::control::Control;
use crate::error::{ExchangeError, ExchangeResult};
use crate::message::{Message, Nonce, AUTH_TAG_BYTES, NONCE_BYTES};
use crate::protocol::PROTOCOL_VERSION;

/// The labels mixed into each side's tag, so that the server's tag is never a valid client proof.
const CLIENT_LABEL: &[u8] = b"gdrperf exchange v2: client proof";
const SERVER_LABEL: &[u8] = b"gdrperf exchange v2: server proof";

/// The shared secret. Its `Debug` shows no byte of it, so it can sit in a config that is logged.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Token(<hidden>)")
    }
}

/// The least a token must hold. A passive observer of one handshake (or an impostor server, to
/// which the client proves first) gets a (nonce, nonce, tag) triple it can test guesses against
/// offline, as fast as it computes HMAC-SHA256; 128 random bits put that search out of reach, as
/// for any symmetric key (NIST SP 800-57 Part 1, security strength 128).
pub const TOKEN_MIN_BITS: u32 = 128;

/// What to tell a user whose token is too weak.
pub const MAKE_A_TOKEN: &str =
    "make one with `gdrperf token` (128 random bits as hex) or `openssl rand -hex 16`";

/// Why a token text is refused (see [`check_token_strength`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeakToken {
    #[error("is empty: an empty secret protects nothing; unset it or give a secret ({MAKE_A_TOKEN})")]
    Empty,
    #[error("holds at most about {bits} bits of randomness ({characters} characters of {alphabet}); a token needs {TOKEN_MIN_BITS}, so that a recorded handshake cannot be guessed offline: {MAKE_A_TOKEN}")]
    TooWeak { bits: u32, characters: usize, alphabet: &'static str },
    #[error("uses only {distinct} different characters (blank or repeated): no random secret looks like that; {MAKE_A_TOKEN}")]
    Repetitive { distinct: usize },
}

/// The fewest different characters a token may use. A random 32-hex-digit token uses fewer
/// than 8 of the 16 digits with a probability below 10^-12; twenty spaces, `aaaa...` or
/// `abababab...` use one or two, and the length rule alone would pass them. White space is not
/// counted.
const MIN_DISTINCT_CHARACTERS: usize = 8;

/// Refuses a token that cannot hold [`TOKEN_MIN_BITS`] random bits. The estimate is an upper
/// bound from the token's form only (length times the bits of its alphabet: 4 for hex, 6 for
/// base64/base64url, 6.5 for any other printable text), so it catches short and word-like tokens
/// but cannot tell a long pass-phrase from random text: `gdrperf token` is the safe source.
/// One function, called wherever a token is accepted (`--token`, `GDRPERF_TOKEN`, a token file).
pub fn check_token_strength(text: &str) -> Result<(), WeakToken> {
    if text.is_empty() {
        return Err(WeakToken::Empty);
    }
    let characters = text.chars().count();
    let is_base64 = |character: char| character.is_ascii_alphanumeric() || "+/-_=".contains(character);
    let (tenths_per_character, alphabet) = if text.chars().all(|character| character.is_ascii_hexdigit()) {
        (40, "hex digits, 4 bits each")
    } else if text.chars().all(is_base64) {
        (60, "base64, 6 bits each")
    } else {
        (65, "printable text, at most 6.5 bits each")
    };
    let bits = u32::try_from(characters).unwrap_or(u32::MAX).saturating_mul(tenths_per_character) / 10;
    if bits < TOKEN_MIN_BITS {
        return Err(WeakToken::TooWeak { bits, characters, alphabet });
    }
    let mut seen: Vec<char> = text.chars().filter(|character| !character.is_whitespace()).collect();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() < MIN_DISTINCT_CHARACTERS {
        return Err(WeakToken::Repetitive { distinct: seen.len() });
    }
    Ok(())
}

/// A fresh token: 128 random bits from the kernel, as 32 hex digits (`gdrperf token`).
pub fn random_token_hex() -> std::io::Result<String> {
    let mut bits = [0u8; 16];
    std::fs::File::open("/dev/urandom").and_then(|mut source| source.read_exact(&mut bits))?;
    Ok(bits.iter().map(|byte| format!("{byte:02x}")).collect())
}

impl Token {
    /// A token strong enough to guard our keys (see [`check_token_strength`]).
    pub fn new(text: &str) -> Result<Token, WeakToken> {
        check_token_strength(text)?;
        Ok(Token(text.as_bytes().to_vec()))
    }

    fn mac(&self, label: &[u8], server_nonce: &Nonce, client_nonce: &Nonce) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(label);
        mac.update(server_nonce);
        mac.update(client_nonce);
        mac
    }

    fn tag(&self, label: &[u8], server_nonce: &Nonce, client_nonce: &Nonce) -> [u8; AUTH_TAG_BYTES] {
        self.mac(label, server_nonce, client_nonce).finalize().into_bytes().into()
    }

    /// Compares in constant time, so the time a refusal takes says nothing about the tag.
    fn verify(
        &self,
        label: &[u8],
        server_nonce: &Nonce,
        client_nonce: &Nonce,
        tag: &[u8; AUTH_TAG_BYTES],
    ) -> bool {
        self.mac(label, server_nonce, client_nonce).verify_slice(tag).is_ok()
    }
}

/// 32 bytes from the kernel's random source.
fn random_nonce() -> ExchangeResult<Nonce> {
    let mut nonce = [0u8; NONCE_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut nonce))
        .map_err(ExchangeError::Random)?;
    Ok(nonce)
}

const SET_THE_TOKEN: &str = "give both sides the same --token or GDRPERF_TOKEN";

impl Control {
    /// Server side: challenge the client; return only when it may see our hello.
    pub(super) fn authenticate_client(&mut self, token: Option<&Token>) -> ExchangeResult<()> {
        let server_nonce = random_nonce()?;
        let challenge = Message::Challenge {
            version: PROTOCOL_VERSION,
            nonce: server_nonce,
            token_required: token.is_some(),
        };
        self.send(&challenge, "sending the challenge")?;
        let (version, client_nonce, tag) = match self.receive("waiting for the client's proof") {
            Ok(Message::Proof { version, nonce, tag }) => (version, nonce, tag),
            // A version-1 client sends its hello straight away.
            Ok(Message::Hello(hello)) => return Err(self.refuse_version(hello.version)),
            Ok(other) => {
                return Err(ExchangeError::Unexpected {
                    peer: self.peer.clone(),
                    expected: "Proof",
                    got: other.kind().into(),
                })
            }
            Err(ExchangeError::PeerFailed { message, .. }) => {
                return Err(self.authentication_error(format!("the client refused: {message}")))
            }
            Err(error) => return Err(error),
        };
        if version != PROTOCOL_VERSION {
            return Err(self.refuse_version(version));
        }
        let reason = match (token, tag) {
            (None, None) => None,
            (Some(_), None) => {
                Some(format!("the client has no token and this server requires one: {SET_THE_TOKEN}"))
            }
            (None, Some(_)) => {
                Some(format!("the client has a token and this server has none: {SET_THE_TOKEN}"))
            }
            (Some(token), Some(tag)) => (!token.verify(CLIENT_LABEL, &server_nonce, &client_nonce, &tag))
                .then(|| {
                    format!(
                        "wrong token: the client's proof does not match the server's token ({SET_THE_TOKEN})"
                    )
                }),
        };
        if let Some(reason) = reason {
            self.report_failure(&reason);
            return Err(self.authentication_error(reason));
        }
        let tag = token.map(|token| token.tag(SERVER_LABEL, &server_nonce, &client_nonce));
        self.send(&Message::Accepted { tag }, "accepting the client")
    }

    /// Client side: answer the challenge; return only when the server proved itself too.
    pub(super) fn authenticate_server(&mut self, token: Option<&Token>) -> ExchangeResult<()> {
        let (version, server_nonce, token_required) =
            match self.receive("waiting for the server's challenge")? {
                Message::Challenge { version, nonce, token_required } => (version, nonce, token_required),
                // A version-1 server sends its hello straight away.
                Message::Hello(hello) => return Err(self.refuse_version(hello.version)),
                other => {
                    return Err(ExchangeError::Unexpected {
                        peer: self.peer.clone(),
                        expected: "Challenge",
                        got: other.kind().into(),
                    })
                }
            };
        if version != PROTOCOL_VERSION {
            return Err(self.refuse_version(version));
        }
        let refusal = match (token, token_required) {
            (None, true) => {
                Some(format!("the server requires a token and this client has none: {SET_THE_TOKEN}"))
            }
            (Some(_), false) => {
                Some(format!("this client has a token and the server has none: {SET_THE_TOKEN}"))
            }
            _ => None,
        };
        if let Some(reason) = refusal {
            self.report_failure(&reason);
            return Err(self.authentication_error(reason));
        }
        let client_nonce = random_nonce()?;
        let tag = token.map(|token| token.tag(CLIENT_LABEL, &server_nonce, &client_nonce));
        self.send(
            &Message::Proof { version: PROTOCOL_VERSION, nonce: client_nonce, tag },
            "sending our proof",
        )?;
        let server_tag = match self.receive("waiting for the server to accept our proof") {
            Ok(Message::Accepted { tag }) => tag,
            Ok(other) => {
                return Err(ExchangeError::Unexpected {
                    peer: self.peer.clone(),
                    expected: "Accepted",
                    got: other.kind().into(),
                })
            }
            Err(ExchangeError::PeerFailed { message, .. }) => {
                return Err(self.authentication_error(format!("the server refused: {message}")))
            }
            Err(error) => return Err(error),
        };
        match (token, server_tag) {
            (None, _) => Ok(()),
            (Some(token), Some(tag)) if token.verify(SERVER_LABEL, &server_nonce, &client_nonce, &tag) => {
                Ok(())
            }
            (Some(_), _) => {
                let reason =
                    "the server's proof does not match our token: is another server listening on this port?"
                        .to_string();
                self.report_failure(&reason);
                Err(self.authentication_error(reason))
            }
        }
    }

    fn authentication_error(&self, detail: String) -> ExchangeError {
        ExchangeError::Authentication { peer: self.peer.clone(), detail }
    }

    /// Tells the peer of another version why we stop, and names both versions.
    fn refuse_version(&mut self, theirs: u32) -> ExchangeError {
        let error = ExchangeError::Version { peer: self.peer.clone(), ours: PROTOCOL_VERSION, theirs };
        self.report_failure(&error.to_string());
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    use crate::Hello;

    fn token(text: &str) -> Option<Token> {
        Some(Token::new(text).unwrap())
    }

    /// Runs a server with `server_token` and a client with `client_token` over loopback TCP and
    /// returns both sides' hello results as text ("ok" or the error).
    fn handshake(server_token: Option<Token>, client_token: Option<Token>) -> (String, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut control = Control::accept(&listener, Duration::from_secs(5)).unwrap();
            outcome(control.exchange_hello(&crate::tests::hello(), server_token.as_ref()))
        });
        let mut client = Control::connect("127.0.0.1", port, Duration::from_secs(5), "gdr-write-bw").unwrap();
        let client_result = outcome(client.exchange_hello(&crate::tests::hello(), client_token.as_ref()));
        (server.join().unwrap(), client_result)
    }

    fn outcome(result: ExchangeResult<Hello>) -> String {
        result.map(|_| "ok".to_string()).unwrap_or_else(|error| error.to_string())
    }

    #[test]
    fn matching_tokens_and_no_tokens_both_connect() {
        assert_eq!(handshake(None, None), ("ok".into(), "ok".into()));
        assert_eq!(
            handshake(token("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"), token("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4")),
            ("ok".into(), "ok".into())
        );
    }

    #[test]
    fn a_wrong_token_is_refused_on_both_sides() {
        let (server, client) =
            handshake(token("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"), token("0123456789abcdef0123456789abcdef"));
        assert!(server.contains("authentication with peer") && server.contains("wrong token"), "{server}");
        assert!(
            client.contains("authentication with peer") && client.contains("the server refused: wrong token"),
            "{client}"
        );
    }

    #[test]
    fn a_token_on_one_side_only_is_refused_with_the_fix_named() {
        let (server, client) = handshake(token("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"), None);
        assert!(client.contains("the server requires a token and this client has none"), "{client}");
        assert!(server.contains("the client refused"), "{server}");
        assert!(client.contains("GDRPERF_TOKEN"), "{client}");
        let (server, client) = handshake(None, token("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4"));
        assert!(client.contains("this client has a token and the server has none"), "{client}");
        assert!(server.contains("authentication with peer"), "{server}");
    }

    #[test]
    fn tags_depend_on_token_label_and_both_nonces() {
        let secret = Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").unwrap();
        let (a, b) = ([1u8; NONCE_BYTES], [2u8; NONCE_BYTES]);
        let tag = secret.tag(CLIENT_LABEL, &a, &b);
        assert!(secret.verify(CLIENT_LABEL, &a, &b, &tag));
        assert!(!secret.verify(SERVER_LABEL, &a, &b, &tag), "a client proof must not pass as the server's");
        assert!(!secret.verify(CLIENT_LABEL, &b, &a, &tag), "nonces are not interchangeable");
        assert!(!Token::new("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d5").unwrap().verify(CLIENT_LABEL, &a, &b, &tag));
        assert_ne!(random_nonce().unwrap(), random_nonce().unwrap());
        assert_eq!(Token::new("").unwrap_err(), WeakToken::Empty);
        assert_eq!(format!("{secret:?}"), "Token(<hidden>)");
    }

    /// Tokens that cannot be guessed offline: a word-like or short token is refused, naming how to make a good one;
    /// 32 hex digits (what `gdrperf token` prints) or 22 base64 characters pass.
    #[test]
    fn weak_tokens_are_refused_with_the_fix_named() {
        for weak in ["s3cretTK", "guess", "0123456789abcdef0123456789abcde", "correct-horse-batt"] {
            let refusal = check_token_strength(weak).unwrap_err().to_string();
            assert!(refusal.contains("a token needs 128"), "{weak}: {refusal}");
            assert!(
                refusal.contains("gdrperf token") && refusal.contains("openssl rand -hex 16"),
                "{refusal}"
            );
        }
        assert!(check_token_strength("s3cretTK").unwrap_err().to_string().contains("8 characters of base64"));
        // Issue 44: long enough by the length rule, but no secret at all.
        for blank in
            [" ".repeat(20), "a".repeat(40), "ab".repeat(20), "\t \t".repeat(10), "0123456 ".repeat(4)]
        {
            let refusal = check_token_strength(&blank).unwrap_err();
            assert!(matches!(refusal, WeakToken::Repetitive { .. }), "{blank:?}: {refusal}");
            assert!(refusal.to_string().contains("gdrperf token"), "{refusal}");
        }
        let fresh = random_token_hex().unwrap();
        assert_eq!(fresh.len(), 32);
        assert_ne!(fresh, random_token_hex().unwrap());
        for strong in [fresh.as_str(), "q3Zt9XbLw0Rk7VfYp2Hd8A", "0123456789abcdef0123456789abcdef"] {
            assert_eq!(check_token_strength(strong), Ok(()), "{strong}");
        }
    }

    /// The point of the token: a client that cannot prove it never sees a buffer address or key.
    #[test]
    fn a_refused_client_receives_no_rkey() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut control = Control::accept(&listener, Duration::from_secs(5)).unwrap();
            control
                .exchange_hello(&crate::tests::hello(), token("5f0c2d9e8a7b41c3b6d2e9f0a1b2c3d4").as_ref())
                .is_err()
        });
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        stream.read_exact(&mut body).unwrap();
        assert!(matches!(
            super::super::decode_body(&body),
            Ok(Message::Challenge { token_required: true, .. })
        ));
        // A made-up proof, as an attacker without the token would send.
        let forged = Message::Proof {
            version: PROTOCOL_VERSION,
            nonce: [7; NONCE_BYTES],
            tag: Some([0; AUTH_TAG_BYTES]),
        };
        std::io::Write::write_all(&mut stream, &super::super::encode(&forged)).unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        assert!(server.join().unwrap(), "the server must refuse");
        let rest = String::from_utf8_lossy(&rest);
        assert!(rest.contains("wrong token"), "{rest}");
        assert!(!rest.contains("rkey") && !rest.contains("Hello"), "the server revealed its hello: {rest}");
    }
}
