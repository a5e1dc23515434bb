//! Connecting a side: its local resources made (device, QPs, buffers, pinned first), the peer
//! admitted and its hello checked, the QPs connected. The connected [`Session`] itself, what an
//! engine works with, is `harness::session`: the engines need its type, not how it came to be.

use std::net::TcpListener;

use crate::error::ProtocolError;
use crate::error::{Error, Result};
use crate::exchange::Message;
use crate::exchange::{Control, Door, Hello, Refusal, SideInfo, PROTOCOL_VERSION};
use crate::harness::session::{hostname, Connection, LocalResources, Session, Side};
use crate::memory::buffers::BenchBuffer;
use crate::memory::staging::ring::staged_len;
use crate::memory::staging::{CudaStager, HostStager};
use crate::node::cpu_placement;
use crate::options::args::MemoryKind;
use crate::options::bandwidth::{refuse_staged, StagedRules};
use crate::options::config::{BenchConfig, Role};
use crate::options::placement::Placement;
use crate::verbs::connection_manager::{self, CmEnd, CmPeer, CmWait};
use crate::verbs::CmRefusal;
use crate::verbs::{CompletionQueue, Device, Mtu, PathSettings, QueuePairSizes, RcQueuePair, RemoteAccess};

impl LocalResources {
    /// Opens the device and creates one QP and one registered buffer per `-q`.
    ///
    /// A staged buffer (payload and bounce buffer) is a ring of send-depth slots of the largest
    /// message, capped at [`crate::memory::staging::ring::RING_BYTES`]: see `memory::staging::ring`.
    ///
    /// GPU memory is looked at first: a missing CUDA driver is the likelier mistake on a node
    /// being set up, and its message says more than a later registration failure would.
    pub fn create(
        config: &BenchConfig,
        placement: &Placement,
        sizes: QueuePairSizes,
        buffer_len: usize,
        access: RemoteAccess,
    ) -> Result<LocalResources> {
        let gpu = open_gpu(placement)?;
        let device_name = match placement.device.as_deref() {
            Some("auto") => Some(nearest_nic(placement.near_gpu)?),
            other => other.map(str::to_string),
        };
        let device = Device::open(device_name.as_deref())?;
        if config.rdma_cm && device.is_simulated() {
            return Err(crate::verbs::VerbsError::NotOnSimulatedNic { what: "rdma_cm (-R)" }.into());
        }
        // Pinned before anything is allocated: first touch puts the buffers on this node.
        let cpu =
            cpu_placement::place_current_thread(&config.cpu, device.name()).map_err(Error::CpuPlacement)?;
        let port = device.active_port(config.ib_port)?;
        // With -R rdma_cm picks the GID from the address, as in perftest (whose -x it then
        // overrides): `-x` is only compared with it once connected (`note_rdma_cm_gid`).
        let requested_gid = if config.rdma_cm { None } else { config.gid_index };
        let gid = device.choose_gid_of(&port, requested_gid, config.ipv6_gid)?;
        let protection_domain = device.alloc_pd()?;
        // Room for every signaled send and every posted receive of every QP at once.
        let depth = config.qps * (sizes.send_depth + sizes.recv_depth) + 16;
        let completion_queue = CompletionQueue::new(&device, depth)?;
        let mut queue_pairs = Vec::new();
        let mut buffers = Vec::new();
        let ordering = config.memory.relaxed_ordering;
        for _ in 0..config.qps {
            queue_pairs.push(RcQueuePair::new(
                &protection_domain,
                &completion_queue,
                sizes,
                port.number,
                access,
            )?);
            buffers.push(match (placement.kind, &gpu) {
                (MemoryKind::Cuda, Some(gpu)) => BenchBuffer::gpu(
                    &protection_domain,
                    gpu,
                    buffer_len,
                    config.memory.gdr,
                    access,
                    ordering,
                )?,
                (MemoryKind::CudaStaged, Some(gpu)) => BenchBuffer::staged(
                    &protection_domain,
                    Box::new(CudaStager::new(gpu, staged_len(buffer_len, sizes.send_depth), buffer_len)?),
                    MemoryKind::CudaStaged,
                    access,
                    ordering,
                )?,
                (MemoryKind::HostStaged, _) => BenchBuffer::staged(
                    &protection_domain,
                    Box::new(HostStager::new(staged_len(buffer_len, sizes.send_depth))?),
                    MemoryKind::HostStaged,
                    access,
                    ordering,
                )?,
                _ => BenchBuffer::host(&protection_domain, buffer_len, access, ordering)?,
            });
        }
        let mut path = crate::node::pcie::path_facts(&device, &port, &buffers, &cpu);
        if let Some(stager) = buffers.first_mut().and_then(BenchBuffer::stager) {
            path.staged_copy = Some(crate::memory::staging::measure_copy_rates(stager, config.timeout)?);
        }
        let rdma_cm = match (config.rdma_cm, &config.role) {
            (false, _) => None,
            (true, Role::Server) => Some(CmEnd::server(config.listen_address().ip(), config.tcp_port)?),
            (true, _) => Some(CmEnd::client()?),
        };
        let (read_depth, lowered) = config.read_depth.on_device(device.max_reads_per_qp());
        if let Some(lowered) = lowered {
            eprintln!("{}: {lowered}", crate::harness::program_name());
        }
        Ok(LocalResources {
            read_depth: read_depth.min(u32::from(u8::MAX)) as u8,
            device,
            port,
            gid,
            protection_domain,
            completion_queue,
            queue_pairs,
            buffers,
            cpu,
            path,
            rdma_cm,
        })
    }

    pub(crate) fn hello(&self, config: &BenchConfig, greeting: &Greeting) -> Hello {
        let mut parameters = config.shared_parameters();
        parameters["test"] = serde_json::Value::String(greeting.test.to_string());
        if let (Some(all), Some(extra)) = (parameters.as_object_mut(), greeting.parameters.as_object()) {
            all.extend(extra.clone());
        }
        Hello {
            version: PROTOCOL_VERSION,
            gdrperf_version: env!("CARGO_PKG_VERSION").to_string(),
            host: hostname(),
            parameters,
            side: SideInfo {
                device: self.device.name().to_string(),
                port: self.port.number,
                // The most this side takes: its port's active MTU, lowered to its -m. The peer
                // takes the smaller of both, so two different -m meet at the smaller, as
                // perftest's check_mtu has the sides agree.
                active_mtu: config
                    .mtu
                    .map_or(self.port.active_mtu, |asked| asked.min(self.port.active_mtu))
                    .bytes(),
                memory: self.buffers.first().map(BenchBuffer::kind).unwrap_or(MemoryKind::Host),
                gpu: self.buffers.first().and_then(BenchBuffer::gpu_description),
                // The protocol carries the facts as plain JSON; Session::peer_path reads them back.
                path: serde_json::to_value(&self.path).ok(),
            },
            endpoints: self
                .queue_pairs
                .iter()
                .map(|queue_pair| queue_pair.endpoint(self.port.lid, self.gid))
                .collect(),
            buffers: self.buffers.iter().map(|buffer| buffer.region().remote()).collect(),
            placements: greeting.placements.clone(),
            lane: greeting.lane,
            rdma_cm_port: self.rdma_cm.as_ref().and_then(CmEnd::listening_port),
            rdma_cm_secret: self.rdma_cm.as_ref().and_then(CmEnd::secret).cloned(),
        }
    }
}

/// What a side says of its run besides its resources: the test, the parameters the peer must
/// share, its placement list (so both sides agree on rounds or lanes) and which lane this is.
#[derive(Debug, Clone)]
pub struct Greeting {
    pub test: &'static str,
    pub parameters: serde_json::Value,
    /// Labels of this side's placements ("host", "cuda:0"), in run order.
    pub placements: Vec<String>,
    /// The lane of a `--concurrent` run this connection carries (0 otherwise).
    pub lane: u32,
    /// What staged memory cannot do in this run: checked as soon as the hellos tell both
    /// memories, before any QP is connected.
    pub staged: StagedRules,
}

/// [`refuse_staged`] for this side (`server` or not), its own memory and its peer's hello.
/// See [`Session::peer_path`].
fn peer_path_facts(peer: &Hello) -> Option<gdrperf_ceiling::EndFacts> {
    peer.side.path.clone().and_then(|facts| serde_json::from_value(facts).ok())
}

fn refuse_pairing(greeting: &Greeting, server: bool, local: &LocalResources, peer: &Hello) -> Result<()> {
    let ours = local.buffers.first().map(BenchBuffer::kind).unwrap_or(MemoryKind::Host);
    let (server_memory, client_memory) =
        if server { (ours, peer.side.memory) } else { (peer.side.memory, ours) };
    Ok(refuse_staged(greeting.staged, server_memory, client_memory)?)
}

/// Loads CUDA and opens the placement's GPU when its buffers live in GPU memory.
fn open_gpu(placement: &Placement) -> Result<Option<gdrperf_cuda::Gpu>> {
    match placement.gpu {
        None => Ok(None),
        Some(index) => Ok(Some(gdrperf_cuda::Cuda::load()?.open_gpu(index)?)),
    }
}

/// `--ib-dev auto`: the RDMA device closest to GPU `near_gpu` on PCIe, as `gdrperf doctor`
/// recommends it (same switch first; GPUs and NICs paired 1:1 on a DGX-like node).
fn nearest_nic(near_gpu: Option<usize>) -> Result<String> {
    let index = near_gpu.ok_or_else(|| {
        // `BenchConfig::from_args` refuses -d auto without GPU memory, and placements give
        // every placement of such a run a GPU to be near.
        Error::Internal(crate::error::InternalError::AutoPlacementWithoutGpu)
    })?;
    let bus_id = gdrperf_cuda::Cuda::load()?.gpu_info(index)?.bus_id.to_string();
    match gdrperf_topology::recommend_nic(std::path::Path::new("/"), &bus_id) {
        Ok(Some(name)) => {
            eprintln!("--ib-dev auto: {name} is the RDMA device nearest to GPU {index} ({bus_id})");
            Ok(name)
        }
        Ok(None) => Err(Error::from(crate::verbs::VerbsError::NoDevice {
            detail: "--ib-dev auto found no RDMA device in /sys/class/infiniband".into(),
        })),
        Err(source) => Err(Error::NearestNic { source }),
    }
}

/// Turned-away connections named on stderr; after this many only every hundredth, so that a
/// port scan cannot flood the log.
const REFUSALS_NAMED: usize = 20;

pub(crate) fn report_refusal(refusal: &Refusal) {
    if refusal.count <= REFUSALS_NAMED || refusal.count.is_multiple_of(100) {
        eprintln!(
            "{}: turned away {} (connection {}): {}; still waiting for the client",
            crate::harness::program_name(),
            refusal.peer,
            refusal.count,
            refusal.reason
        );
    }
}

impl Session {
    /// The peer's path facts from its hello (see `LocalResources::hello`): `None` from an older
    /// peer, or where they no longer read as `EndFacts` once the protocol cleaned them (a string
    /// that was an enum's name and held a control character): the rows then say the peer's end
    /// is unknown.
    pub(crate) fn peer_path(&self) -> Option<gdrperf_ceiling::EndFacts> {
        peer_path_facts(&self.peer)
    }

    /// Waits for the peer (server: on `listener`; client: connects), exchanges hellos, connects
    /// every QP. On failure after the control channel exists, the peer is told why.
    pub fn connect(
        config: &BenchConfig,
        local: LocalResources,
        listener: Option<&TcpListener>,
        greeting: &Greeting,
    ) -> Result<Session> {
        let Some(listener) = listener else { return Session::connect_on(config, local, None, greeting) };
        // The server admits the first client that passes the challenge and the parameter check;
        // strangers are turned away, named on stderr, and the wait goes on.
        let ours = local.hello(config, greeting);
        let door =
            Door { token: config.token.as_ref(), timeout: config.timeout, wait_limit: config.accept_timeout };
        let (control, peer) = Control::admit(listener, &ours, door, &mut report_refusal)?;
        Session::from_admitted(config, local, control, peer, greeting)
    }

    /// A server's session from a connection whose hellos are swapped: refuses a pairing the
    /// engines cannot run (staged rules), then connects the QPs.
    pub(crate) fn from_admitted(
        config: &BenchConfig,
        local: LocalResources,
        mut control: Control,
        peer: Hello,
        greeting: &Greeting,
    ) -> Result<Session> {
        let connected = refuse_pairing(greeting, true, &local, &peer)
            .and_then(|()| Session::connect_queue_pairs(config, local, peer, &mut control));
        match connected {
            Ok((local, peer, mtu)) => Ok(Session {
                side: Side::Server,
                local,
                control,
                peer,
                mtu,
                connection: Connection::default(),
            }),
            Err(error) => {
                control.report_failure(&error.to_string());
                Err(error)
            }
        }
    }

    /// [`Session::connect`] with the server's connection already accepted (`accepted`), or
    /// `None` for a client, which connects here.
    pub fn connect_on(
        config: &BenchConfig,
        local: LocalResources,
        accepted: Option<Control>,
        greeting: &Greeting,
    ) -> Result<Session> {
        let test = greeting.test;
        let ours = local.hello(config, greeting);
        let (side, mut control, hello) = match (&config.role, accepted) {
            (_, Some(mut control)) => {
                let hello = control.exchange_hello(&ours, config.token.as_ref());
                (Side::Server, control, hello)
            }
            (Role::Client { host }, None) => {
                let (control, hello) =
                    client_handshake(config, host, &format!("gdr-{}", test.replace('_', "-")), &ours)?;
                (Side::Client, control, hello)
            }
            (Role::Loopback, None) => {
                let (control, hello) = client_handshake(config, "127.0.0.1", test, &ours)?;
                (Side::Client, control, hello)
            }
            (Role::Server, None) => {
                return Err(Error::Internal(crate::error::InternalError::ServerWithoutListener))
            }
        };
        let result = hello.map_err(Error::from).and_then(|peer| {
            refuse_pairing(greeting, side == Side::Server, &local, &peer)?;
            Session::connect_queue_pairs(config, local, peer, &mut control)
        });
        match result {
            Ok((local, peer, mtu)) => {
                Ok(Session { side, local, control, peer, mtu, connection: Connection::default() })
            }
            Err(error) => {
                control.report_failure(&error.to_string());
                Err(error)
            }
        }
    }

    /// The next round of a run over several placements: this side's new resources replace the
    /// old ones (QPs and buffers are made anew; an RC QP connects once), the hellos are swapped
    /// again on the same, already authenticated, control channel, and the new QPs connected.
    pub fn replace_resources(
        &mut self,
        config: &BenchConfig,
        local: LocalResources,
        greeting: &Greeting,
    ) -> Result<()> {
        let ours = local.hello(config, greeting);
        let peer = self.control.swap_hellos(&ours)?;
        if let Err(error) = refuse_pairing(greeting, !self.is_client(), &local, &peer) {
            self.control.report_failure(&error.to_string());
            return Err(error);
        }
        let (local, peer, mtu) = Session::connect_queue_pairs(config, local, peer, &mut self.control)?;
        self.local = local;
        self.peer = peer;
        self.mtu = mtu;
        self.connection = Connection::default();
        Ok(())
    }

    fn connect_queue_pairs(
        config: &BenchConfig,
        mut local: LocalResources,
        peer: Hello,
        control: &mut Control,
    ) -> Result<(LocalResources, Hello, Mtu)> {
        if peer.endpoints.len() != local.queue_pairs.len() || peer.buffers.len() != local.queue_pairs.len() {
            return Err(Error::Protocol(crate::error::ProtocolError::QueuePairCount {
                endpoints: peer.endpoints.len(),
                buffers: peer.buffers.len(),
                queue_pairs: local.queue_pairs.len(),
            }));
        }
        // Every size is written into (or read from) the peer's buffer at its start: a buffer the
        // peer says is shorter would let a wrong or hostile hello turn our RDMA into a remote
        // access error mid-run, or aim it past the peer's region; refuse it before connecting.
        let largest = config.sizes.iter().copied().max().unwrap_or(0) as u64;
        if let Some((index, short)) = peer.buffers.iter().enumerate().find(|(_, buffer)| buffer.len < largest)
        {
            return Err(Error::Protocol(crate::error::ProtocolError::ShortBuffer {
                queue_pair: index,
                len: short.len,
                largest,
            }));
        }
        let peer_mtu = Mtu::from_bytes(peer.side.active_mtu).unwrap_or(local.port.active_mtu);
        // perftest's rule (`set_mtu`, `check_mtu`): the smaller active MTU of the two ports, and a
        // `-m` above it lowered to it (the header says so); a `-m` below it is kept.
        let mtu = effective_mtu(config.mtu, local.port.active_mtu, peer_mtu);
        let read_depth = local.read_depth;
        let path = PathSettings {
            port: local.port.number,
            mtu,
            local_gid: local.gid,
            read_depth,
            // With -R rdma_cm's route sets both (the config refuses -T and -S there).
            service_level: config.service_level.unwrap_or(0),
            traffic_class: config.traffic_class.unwrap_or(0),
        };
        if local.rdma_cm.is_some() {
            connect_through_rdma_cm(config, &mut local, &peer, &path, control)?;
            return Ok((local, peer, mtu));
        }
        for (queue_pair, remote) in local.queue_pairs.iter_mut().zip(&peer.endpoints) {
            queue_pair.connect(remote, &path)?;
        }
        Ok((local, peer, mtu))
    }
}

/// `-R`: a server opens its rdma_cm listener now that its client is admitted and tells it so;
/// the client waits for that, then connects with the secret of the server's hello. The server
/// accepts only requests from the admitted client's address with that secret (strangers are
/// rejected, named on stderr, and the wait goes on). Then the GID is the one rdma_cm used.
fn connect_through_rdma_cm(
    config: &BenchConfig,
    local: &mut LocalResources,
    peer: &Hello,
    path: &PathSettings,
    control: &mut Control,
) -> Result<()> {
    let Some(rdma_cm) = local.rdma_cm.as_mut() else { return Ok(()) };
    let control_peer = control_peer_address(control.peer())?;
    let secret;
    let cm_peer = match (rdma_cm.listening_port(), peer.rdma_cm_port, &peer.rdma_cm_secret) {
        (Some(_), _, _) => {
            rdma_cm.listen()?;
            control.send(&Message::RdmaCmListening, "telling the client rdma_cm listens")?;
            CmPeer::Server { admitted: control_peer.ip() }
        }
        (None, Some(port), Some(server_secret)) => {
            control.expect("RdmaCmListening", "waiting for the server's rdma_cm listener", |message| {
                match message {
                    Message::RdmaCmListening => Ok(()),
                    other => Err(other),
                }
            })?;
            secret = server_secret.clone();
            let ip =
                connection_manager::rdma_cm_address(control_peer.ip(), local.gid.map(|choice| choice.gid));
            CmPeer::Client {
                server: std::net::SocketAddr::new(ip, port),
                secret: &secret,
                type_of_service: config.type_of_service,
            }
        }
        (None, None, _) => return Err(Error::Protocol(ProtocolError::NoRdmaCmPort { missing: "port" })),
        (None, Some(_), None) => {
            return Err(Error::Protocol(ProtocolError::NoRdmaCmPort { missing: "run secret" }))
        }
    };
    let mut refused = 0;
    let mut on_refusal = |source: Option<std::net::IpAddr>, refusal: &CmRefusal| {
        refused += 1;
        if refused <= REFUSALS_NAMED || refused % 100 == 0 {
            let source = source.map_or_else(|| "an unknown address".to_string(), |source| source.to_string());
            eprintln!(
                "{}: rejected an rdma_cm connection request from {source} (request {refused}): {refusal}; \
                 still waiting for the admitted client",
                crate::harness::program_name()
            );
        }
    };
    let mut give_up = || control.peer_gone(std::time::Duration::ZERO).map(Error::from);
    let wait = CmWait { timeout: config.timeout, give_up: &mut give_up, on_refusal: &mut on_refusal };
    rdma_cm.connect(&local.device, &mut local.queue_pairs, path, cm_peer, wait)?;
    let used = rdma_cm
        .local_address()
        .and_then(|address| local.device.find_gid(&local.port, connection_manager::gid_of_address(address)));
    if let (Some(asked), Some(used)) = (config.gid_index, used) {
        if asked != used.index {
            eprintln!(
                "{}: -x {asked}: with -R rdma_cm picks the GID from the address, as in perftest: it used GID {used}",
                crate::harness::program_name()
            );
        }
    }
    local.gid = used.or(local.gid);
    Ok(())
}

/// The control channel's peer ("10.0.0.2:18515") as an address.
fn control_peer_address(control_peer: &str) -> Result<std::net::SocketAddr> {
    control_peer.parse().map_err(|_| {
        Error::Internal(crate::error::InternalError::PeerNotSocketAddress { peer: control_peer.to_string() })
    })
}

/// The path MTU both QPs connect with: `asked` (`-m`) where both ports run at least that, else
/// the smaller of the two ports' active MTUs, as perftest's `set_mtu` and `check_mtu` choose.
pub(crate) fn effective_mtu(asked: Option<Mtu>, local_active: Mtu, peer_active: Mtu) -> Mtu {
    let ports = local_active.min(peer_active);
    asked.map_or(ports, |asked| asked.min(ports))
}

/// A client's connection and handshake, retried while the server answers "busy" to a flood
/// (`Control::connect_and_exchange_hello`).
fn client_handshake(
    config: &BenchConfig,
    host: &str,
    test: &str,
    ours: &Hello,
) -> Result<(Control, std::result::Result<Hello, crate::exchange::ExchangeError>)> {
    Ok(Control::connect_and_exchange_hello(
        host,
        config.tcp_port,
        config.timeout,
        test,
        ours,
        config.token.as_ref(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::{effective_mtu, peer_path_facts};
    use crate::verbs::Mtu;

    fn mtu(bytes: u32) -> Mtu {
        Mtu::from_bytes(bytes).expect("a valid MTU")
    }

    #[test]
    fn two_different_m_meet_at_the_smaller() {
        // Each side's hello carries its port's MTU lowered to its -m; each takes the smaller of
        // its own and the peer's: client -m 1024, server -m 2048, both ports 4096 -> 1024 on both.
        let (client_asked, server_asked, port) = (mtu(1024), mtu(2048), mtu(4096));
        let client_says = client_asked.min(port);
        let server_says = server_asked.min(port);
        assert_eq!(effective_mtu(Some(client_asked), port, server_says), mtu(1024));
        assert_eq!(effective_mtu(Some(server_asked), port, client_says), mtu(1024));
        // -m on one side only: the other side takes it too.
        assert_eq!(effective_mtu(None, port, client_says), mtu(1024));
    }

    #[test]
    fn the_mtu_is_perftests_the_smaller_port_and_a_higher_m_lowered() {
        // No -m: the smaller active MTU of both ports (check_mtu).
        assert_eq!(effective_mtu(None, mtu(4096), mtu(1024)), mtu(1024));
        // -m above the ports: lowered to them (set_mtu "Changing to active mtu", then check_mtu).
        assert_eq!(effective_mtu(Some(mtu(4096)), mtu(2048), mtu(4096)), mtu(2048));
        // -m below the ports: kept.
        assert_eq!(effective_mtu(Some(mtu(512)), mtu(4096), mtu(4096)), mtu(512));
    }

    /// The peer's path facts travel as JSON the protocol cleans (`gdrperf_exchange`): cleaned
    /// free text still reads back as the ceiling's facts, and facts that no longer do (an enum's
    /// name that held a control character) count as unknown rather than failing the run.
    #[test]
    fn a_peers_cleaned_path_facts_read_back_or_count_as_unknown() {
        use gdrperf_exchange::{decode_body, encode, Hello, Message, SideInfo};
        let facts = serde_json::json!({
            "nic": "mlx5_0\x1b[31m", "port": 1, "software_device": "rxe\u{202e}",
            "link_layer": null, "port_rate": "400 Gb/sec\r\nFAIL", "active_mtu": 4096, "max_mtu": 4096,
            "nic_pcie": null, "gpu_pcie": null, "memory": "host", "gpu_nic_relation": null,
            "acs_redirecting": [], "path_findings": [], "iommu_translating": [],
            "nic_numa_node": 0, "thread_numa_node": 0,
        });
        let travelled = |facts: serde_json::Value| {
            let hello = Hello {
                version: gdrperf_exchange::PROTOCOL_VERSION,
                gdrperf_version: String::new(),
                host: String::new(),
                parameters: serde_json::json!({}),
                side: SideInfo {
                    device: String::new(),
                    port: 1,
                    active_mtu: 1024,
                    memory: Default::default(),
                    gpu: None,
                    path: Some(facts),
                },
                endpoints: Vec::new(),
                buffers: Vec::new(),
                placements: Vec::new(),
                lane: 0,
                rdma_cm_port: None,
                rdma_cm_secret: None,
            };
            match decode_body(&encode(&Message::Hello(Box::new(hello)))[4..]).expect("a hello decodes") {
                Message::Hello(hello) => peer_path_facts(&hello),
                other => panic!("decoded {other:?}"),
            }
        };
        let path = travelled(facts.clone()).expect("cleaned facts read back");
        assert_eq!(path.nic, "mlx5_0\\u{1b}[31m");
        assert_eq!(path.port_rate.as_deref(), Some("400 Gb/sec\\r\\nFAIL"));
        let mut spoiled = facts;
        spoiled["memory"] = "host\u{7}".into();
        assert!(travelled(spoiled).is_none(), "an enum's name with a control character reads as unknown");
    }
}
