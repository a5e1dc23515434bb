//! Which rdma_cm connection requests a `-R` server accepts: only the admitted client's.
//!
//! A server's rdma_cm listener is reachable by anyone on the fabric, and the kernel's CM hands
//! it every request. Without a check the first request per QP would take the server's QP (a
//! stranger's SENDs landing in the server's receives). So the server listens only once a client
//! passed the TCP admission (the token's challenge, the terms, the hellos), and accepts a request
//! only if both hold:
//! - it comes from the admitted client's address (the TCP peer's; a client on this host, whose
//!   TCP peer is a loopback address, connects over rdma_cm from this host's own address, the one
//!   the request came to);
//! - its private data holds the per-run secret the server sent in its hello ([`CmSecret`]),
//!   which only the admitted client received.
//!
//! Anything else is rejected (`rdma_reject`, with the reason in the rejection) and the server
//! keeps waiting for its client until its deadline. [`vet_request`] is the decision, a pure
//! function of what the request carries, unit-tested without a device.

use std::io::Read;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Bytes of a secret: 128 random bits, out of reach of guessing within a run.
pub const SECRET_BYTES: usize = 16;

/// What the private data of a gdrperf client's request starts with, before the secret: a request
/// without it is no gdrperf client's (perftest's `-R` client, say), and the refusal says so.
const MAGIC: &[u8; 8] = b"gdrperf1";

/// A `-R` server's per-run secret: made at random for each set of QPs, sent to the admitted
/// client in the server's hello, and required in each of its rdma_cm connection requests. Its
/// `Debug` shows no byte of it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CmSecret([u8; SECRET_BYTES]);

impl std::fmt::Debug for CmSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("CmSecret(<hidden>)")
    }
}

impl CmSecret {
    /// A fresh secret from the kernel's random source.
    pub fn random() -> std::io::Result<CmSecret> {
        let mut bytes = [0u8; SECRET_BYTES];
        std::fs::File::open("/dev/urandom").and_then(|mut source| source.read_exact(&mut bytes))?;
        Ok(CmSecret(bytes))
    }

    /// The private data a client's connection request carries: the magic, then the secret.
    pub fn private_data(&self) -> Vec<u8> {
        [MAGIC.as_slice(), self.0.as_slice()].concat()
    }

    /// A secret of these bytes (a decoded hello's, or a test's).
    pub fn from_bytes(bytes: [u8; SECRET_BYTES]) -> CmSecret {
        CmSecret(bytes)
    }
}

/// Why a connection request was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmRefusal {
    /// It came from another address than the admitted client's (or from none rdma_cm could say).
    Source { from: Option<IpAddr>, admitted: IpAddr },
    /// Its private data holds no gdrperf secret: no gdrperf client of this run sent it.
    NoSecret,
    /// It holds a secret, not this run's.
    WrongSecret,
}

impl CmRefusal {
    /// What the requester reads in the rejection (short: the CM carries at most 148 bytes).
    pub fn reason(&self) -> &'static [u8] {
        match self {
            CmRefusal::Source { .. } => b"gdrperf: not the admitted client's address",
            CmRefusal::NoSecret => b"gdrperf: no run secret in the request",
            CmRefusal::WrongSecret => b"gdrperf: wrong run secret",
        }
    }
}

impl std::fmt::Display for CmRefusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CmRefusal::Source { from: Some(from), admitted } => {
                write!(formatter, "it comes from {from}, not from the admitted client {admitted}")
            }
            CmRefusal::Source { from: None, admitted } => {
                write!(
                    formatter,
                    "rdma_cm gives no IP address for its source; the admitted client is {admitted}"
                )
            }
            CmRefusal::NoSecret => formatter.write_str(
                "it carries no gdrperf run secret (not a gdrperf client of this run, or an older gdrperf)",
            ),
            CmRefusal::WrongSecret => formatter.write_str("its run secret is not this run's"),
        }
    }
}

/// Whether a server accepts a connection request from `source` (the request's source address),
/// sent to `local` (the address it came to), carrying `private_data` (as received: the CM pads it
/// with zeros), when the TCP admission let in a client at `admitted` and the server's hello gave
/// it `secret`. A client on this host (a loopback `admitted`) connects over rdma_cm from one of
/// this host's addresses: the one its request came to, or a loopback one.
pub fn vet_request(
    admitted: IpAddr,
    secret: &CmSecret,
    source: Option<IpAddr>,
    local: Option<IpAddr>,
    private_data: &[u8],
) -> Result<(), CmRefusal> {
    let admitted = admitted.to_canonical();
    let source = source.map(|source| source.to_canonical());
    let from_this_host =
        |source: IpAddr| source.is_loopback() || Some(source) == local.map(|l| l.to_canonical());
    let source_ok = match source {
        Some(source) if source == admitted => true,
        Some(source) => admitted.is_loopback() && from_this_host(source),
        None => false,
    };
    if !source_ok {
        return Err(CmRefusal::Source { from: source, admitted });
    }
    let Some(theirs) = private_data.strip_prefix(MAGIC.as_slice()) else { return Err(CmRefusal::NoSecret) };
    let Some(theirs) = theirs.get(..SECRET_BYTES) else { return Err(CmRefusal::NoSecret) };
    // Every byte is compared, whatever the first difference: the time a rejection takes says
    // nothing of how much of the secret was right.
    let difference = theirs.iter().zip(secret.0.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    match difference {
        0 => Ok(()),
        _ => Err(CmRefusal::WrongSecret),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The private data as a server receives it: what the client sent, padded to the CM's 56.
    fn received(sent: &[u8]) -> Vec<u8> {
        let mut data = sent.to_vec();
        data.resize(crate::rdma_cm::CONNECT_PRIVATE_DATA_MAX, 0);
        data
    }

    #[test]
    fn the_admitted_client_with_the_secret_is_accepted() {
        let secret = CmSecret::from_bytes([7; SECRET_BYTES]);
        let client = ip("192.0.2.11");
        let data = received(&secret.private_data());
        assert_eq!(vet_request(client, &secret, Some(client), Some(ip("192.0.2.10")), &data), Ok(()));
        // The same address written as IPv4-mapped IPv6 on either side is the same address.
        assert_eq!(vet_request(ip("::ffff:192.0.2.11"), &secret, Some(client), None, &data), Ok(()));
        assert_eq!(vet_request(client, &secret, Some(ip("::ffff:192.0.2.11")), None, &data), Ok(()));
    }

    #[test]
    fn another_address_is_refused_even_with_the_secret() {
        let secret = CmSecret::from_bytes([7; SECRET_BYTES]);
        let data = received(&secret.private_data());
        let admitted = ip("192.0.2.11");
        let stranger = ip("192.0.2.66");
        assert_eq!(
            vet_request(admitted, &secret, Some(stranger), Some(ip("192.0.2.10")), &data),
            Err(CmRefusal::Source { from: Some(stranger), admitted })
        );
        assert_eq!(
            vet_request(admitted, &secret, None, None, &data),
            Err(CmRefusal::Source { from: None, admitted })
        );
        // A remote client's TCP address admits no one from this host.
        assert!(vet_request(admitted, &secret, Some(ip("127.0.0.1")), None, &data).is_err());
    }

    #[test]
    fn a_client_on_this_host_connects_from_the_address_its_request_came_to() {
        let secret = CmSecret::from_bytes([9; SECRET_BYTES]);
        let data = received(&secret.private_data());
        let loopback = ip("127.0.0.1");
        let own = ip("10.0.2.15");
        assert_eq!(vet_request(loopback, &secret, Some(own), Some(own), &data), Ok(()));
        assert_eq!(vet_request(loopback, &secret, Some(loopback), Some(own), &data), Ok(()));
        // Another host, though the TCP client was local.
        assert_eq!(
            vet_request(loopback, &secret, Some(ip("10.0.2.16")), Some(own), &data),
            Err(CmRefusal::Source { from: Some(ip("10.0.2.16")), admitted: loopback })
        );
    }

    #[test]
    fn a_missing_or_wrong_secret_is_refused() {
        let secret = CmSecret::from_bytes([7; SECRET_BYTES]);
        let client = ip("192.0.2.11");
        let vet = |data: &[u8]| vet_request(client, &secret, Some(client), None, data);
        // perftest's -R client sends no private data; the CM delivers zeros.
        assert_eq!(vet(&received(&[])), Err(CmRefusal::NoSecret));
        assert_eq!(vet(&[]), Err(CmRefusal::NoSecret));
        // The magic but a secret cut short.
        assert_eq!(vet(&MAGIC[..]), Err(CmRefusal::NoSecret));
        let mut other = CmSecret::from_bytes([7; SECRET_BYTES]);
        other.0[SECRET_BYTES - 1] ^= 1;
        assert_eq!(vet(&received(&other.private_data())), Err(CmRefusal::WrongSecret));
        // The secret without the magic in front.
        assert_eq!(vet(&received(&secret.0)), Err(CmRefusal::NoSecret));
    }

    #[test]
    fn secrets_are_random_hidden_and_fit_the_request() {
        let (a, b) = (CmSecret::random().unwrap(), CmSecret::random().unwrap());
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "CmSecret(<hidden>)");
        assert!(a.private_data().len() <= crate::rdma_cm::CONNECT_PRIVATE_DATA_MAX);
        for refusal in [
            CmRefusal::Source { from: None, admitted: ip("192.0.2.1") },
            CmRefusal::NoSecret,
            CmRefusal::WrongSecret,
        ] {
            assert!(refusal.reason().len() <= crate::rdma_cm::CONNECT_PRIVATE_DATA_MAX, "{refusal}");
        }
    }
}
