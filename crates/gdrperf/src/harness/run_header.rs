//! What a run says of itself before its first row: the run header (console) and metadata
//! (files), and the context every row of the session carries.

use crate::harness::session::{hostname, Session};
use crate::options::config::{BenchConfig, StopRule};
use crate::options::perftest_defaults::{describe_inline, inline_size, InlineRequest};
use crate::options::placement::{self, Placement};
use crate::output::ceiling_columns::{self, RowPath};
use crate::output::{HeaderLine, RowContext, RunStart};

/// The context every row of `test` (the bench's name) on this session carries.
pub(crate) fn row_context(test: &str, config: &BenchConfig, session: &Session) -> RowContext {
    RowContext {
        test: test.to_string(),
        host: hostname(),
        peer_host: session.peer.host.clone(),
        device: session.local.device.name().to_string(),
        peer_device: session.peer.side.device.clone(),
        mtu: session.mtu.bytes(),
        qps: config.qps,
        mem_local: session.memory(),
        mem_remote: session.peer_memory(),
        gpu_local: session
            .local
            .buffers
            .first()
            .and_then(|buffer| buffer.gpu_index())
            .map(|index| index.to_string())
            .unwrap_or_default(),
        gpu_remote: session.peer.side.gpu.clone().unwrap_or_default(),
        lane: String::new(),
        cpu: session.local.cpu.cpu_column(),
        numa_node: session.local.cpu.numa_node,
        gpu_local_bus_id: crate::node::pcie::gpu_bus_id(&session.local.buffers).unwrap_or_default(),
        nic_node_guid: session.local.device.node_guid().unwrap_or_default(),
        gpu_local_uuid: crate::node::pcie::gpu_uuid(&session.local.buffers).unwrap_or_default(),
        // With -R -T the ToS asked of rdma_cm is the traffic class its route gives the QPs.
        traffic_class: config.traffic_class.or(config.type_of_service).map(u32::from),
        service_level: config.service_level.map(u32::from),
        relaxed_ordering: crate::memory::buffers::relaxed_ordering(&session.local.buffers).word().into(),
        nic: Default::default(),
        path: Some(RowPath::new(session.side.is_client(), session.local.path.clone(), session.peer_path())),
    }
}

/// The run header (console) and metadata (files): what ran, where, when, with what.
/// `test` is the bench's name; `setup_header` and `inline` what its set-up says of itself (its
/// extra header lines, its `-I` request).
pub(crate) fn metadata(
    config: &BenchConfig,
    test: &str,
    (setup_header, inline, post_list): (Vec<(String, String)>, Option<InlineRequest>, u32),
    session: &Session,
    placements: &[Placement],
    rounds: usize,
) -> RunStart {
    let labels = placement::labels(placements);
    let local = &session.local;
    // The clock this run times with: the latency engines' (calibrated once per process, the same
    // one they use), or the monotonic clock of the bandwidth engines (`RunClock`, never pinned).
    let (clock, clock_line) = match config.latency_span {
        Some(_) => {
            let facts = gdrperf_stats::SampleClock::new().facts();
            let line = facts.describe();
            (facts, line)
        }
        None => {
            let facts = gdrperf_stats::SampleClock::monotonic().facts();
            let kernel = facts.kernel_clocksource.clone().unwrap_or_else(|| "unknown".into());
            (
                facts,
                format!("monotonic clock (bandwidth timing, thread not pinned; kernel clocksource {kernel})"),
            )
        }
    };
    let qp_connection = crate::verbs::connection_manager::describe(local.rdma_cm.as_ref());
    let mut header: Vec<HeaderLine> = vec![
        HeaderLine::per_placement(
            "Device",
            format!(
                "{} (firmware {})",
                local.device.name(),
                if local.device.firmware().is_empty() { "n/a" } else { local.device.firmware() }
            ),
        ),
        HeaderLine::new(
            "Port",
            format!(
                "{} ({}, {})",
                local.port.number,
                local.port.link_layer,
                local.port.rate.clone().unwrap_or_else(|| "rate unknown".into())
            ),
        ),
        HeaderLine::new(
            "MTU",
            format!(
                "{} (active {}, peer {}{})",
                session.mtu,
                local.port.active_mtu,
                session.peer.side.active_mtu,
                match config.mtu {
                    Some(asked) if asked != session.mtu => {
                        format!("; -m {asked} lowered to the ports' active MTU, as perftest")
                    }
                    _ => String::new(),
                }
            ),
        ),
        HeaderLine::new(
            "GID",
            local.gid.map(|gid| gid.to_string()).unwrap_or_else(|| format!("none (LID {})", local.port.lid)),
        ),
        HeaderLine::new(
            "Peer",
            format!("{} ({} port {})", session.peer.host, session.peer.side.device, session.peer.side.port),
        ),
        HeaderLine::per_placement(
            "Memory",
            format!("local {}, remote {}", session.memory(), session.peer_memory()),
        ),
        HeaderLine::per_placement(
            "GPU",
            format!(
                "local {}, remote {}",
                local
                    .buffers
                    .first()
                    .and_then(|buffer| buffer.gpu_description())
                    .unwrap_or_else(|| "none".into()),
                session.peer.side.gpu.clone().unwrap_or_else(|| "none".into())
            ),
        ),
        HeaderLine::new("CPU", local.cpu.describe()),
        HeaderLine::new("QPs", config.qps.to_string()),
        HeaderLine::new("QP connection", qp_connection.clone()),
        HeaderLine::new("QoS", quality_of_service(config, session)),
        HeaderLine::new("TX depth", config.tx_depth.to_string()),
        HeaderLine::new(
            "Stop",
            match config.stop {
                StopRule::Iterations(n) => format!("{n} iterations per QP (+{} warm-up)", config.warmup),
                StopRule::Duration(d) if config.latency_span.is_some() => {
                    format!("{:.1} s per size (+{} warm-up iterations)", d.as_secs_f64(), config.warmup)
                }
                StopRule::Duration(d) => format!(
                    "{:.1} s per size, measured between margins of {} s (-f) (+{} warm-up iterations)",
                    d.as_secs_f64(),
                    config.margin_seconds,
                    config.warmup
                ),
            },
        ),
        HeaderLine::new("Data check", if config.validate { "on".into() } else { "off".into() }),
        HeaderLine::per_placement("PCIe relax order", relaxed_ordering_line(&local.buffers)),
        HeaderLine::new("Clock", clock_line),
        // What made this output, so a saved console log is a complete result by itself.
        HeaderLine::new("Command", gdrperf_command_line::provenance::command_line(&config.argv)),
        HeaderLine::new("Git commit", gdrperf_command_line::provenance::GIT_COMMIT.into()),
    ];
    if let Some(span) = config.latency_span {
        header.push(HeaderLine::new("Latency sample", span.description().into()));
    }
    if rounds > 1 {
        header.push(HeaderLine::new(
            "Placements",
            format!(
                "{rounds} in turn: local [{}], remote [{}]",
                labels.join(", "),
                session.peer.placements.join(", ")
            ),
        ));
    }
    let pcie = crate::node::pcie::run_pcie_facts(&local.device, &local.buffers);
    let gpu_order = gdrperf_cuda::GpuOrder::from_env();
    if local.buffers.first().and_then(|buffer| buffer.gpu_index()).is_some() {
        header.push(HeaderLine::new("GPU numbering", gpu_order.describe()));
    }
    header.extend(pcie.header_lines().into_iter().map(|(name, value)| HeaderLine::new(&name, value)));
    // The doctor's findings on this end (gdrperf_topology::findings), the words a short row's causes use.
    header.extend(local.path.findings().into_iter().map(|finding| {
        HeaderLine::new(
            "Finding",
            format!("{} {}: {}", finding.level.word(), finding.check.name(), finding.evidence),
        )
    }));
    let ceiling = ceiling_columns::header(&local.path, session.peer_path().as_ref());
    header.push(HeaderLine::per_placement("Ceiling", ceiling));
    header.extend(setup_header.into_iter().map(|(name, value)| HeaderLine::new(&name, value)));
    if let Some(request) = inline {
        let (size, reason) = inline_size(request, session.perftest_knows_inline(), session.cpu_visible());
        header.push(HeaderLine::per_placement("Inline", describe_inline(size, reason)));
    }
    let metadata = serde_json::json!({
        "test": test,
        "gdrperf_version": env!("CARGO_PKG_VERSION"),
        "git_commit": gdrperf_command_line::provenance::GIT_COMMIT,
        "argv": config.argv,
        "date": gdrperf_command_line::provenance::utc_timestamp(),
        "host": hostname(),
        "peer_host": session.peer.host,
        "role": if session.side.is_client() { "client" } else { "server" },
        "device": local.device.name(),
        "firmware": local.device.firmware(),
        "port": local.port.number,
        "link_layer": local.port.link_layer.to_string(),
        "rate": local.port.rate,
        "mtu": session.mtu.bytes(),
        "gid": local.gid.map(|gid| gid.to_string()),
        "memory": session.memory(),
        "gpu": local.buffers.first().and_then(|buffer| buffer.gpu_description()),
        "nvidia_driver": std::fs::read_to_string("/sys/module/nvidia/version").ok().map(|text| text.trim().to_string()),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|text| text.trim().to_string()),
        "peer": session.peer.side,
        "cpu": local.cpu,
        "pcie": pcie,
        "path_facts": local.path,
        "gpu_order": gpu_order.describe(),
        "placements": labels,
        "peer_placements": session.peer.placements,
        "parameters": session.peer.parameters,
        "clock": clock,
        "latency_span": config.latency_span,
        "qp_connection": qp_connection,
        "traffic_class": config.traffic_class,
        "service_level": config.service_level,
        "type_of_service": config.type_of_service,
        "relaxed_ordering": crate::memory::buffers::relaxed_ordering(&local.buffers),
        "perftest_test_info": perftest_test_info(config, test, session, post_list),
    });
    RunStart { header, metadata }
}

/// What perftest's `--out_json` writes under `test_info` (`write_test_info_to_file`), in its
/// key names, and the verb its test name starts with; the rows complete the name.
fn perftest_test_info(
    config: &BenchConfig,
    test: &str,
    session: &Session,
    post_list: u32,
) -> serde_json::Value {
    let local = &session.local;
    let verb = match test.split('_').next().unwrap_or_default() {
        "write" => "RDMA_Write".to_string(),
        "read" => "RDMA_Read".to_string(),
        "send" => "Send".to_string(),
        // -A's value, as perftest spells it (FETCH_AND_ADD by default).
        _ if config.argv.iter().any(|word| word.contains("CMP_AND_SWAP")) => "Atomic_CMP_AND_SWAP".into(),
        _ => "Atomic_FETCH_AND_ADD".into(),
    };
    let on_off = |on: bool| if on { "ON" } else { "OFF" };
    let relaxed =
        crate::memory::buffers::relaxed_ordering(&local.buffers) == crate::verbs::RelaxedOrdering::Asked;
    let link_type = match local.port.link_layer.to_string().as_str() {
        "Ethernet" => "Ethernet",
        _ => "IB",
    };
    let mut info = serde_json::json!({
        "verb": verb,
        "test_info": {
            "Dual_port": "OFF",
            "Device": local.device.name(),
            "Number_of_qps": config.qps,
            "Transport_type": "IB",
            "Connection_type": "RC",
            "Using_SRQ": "OFF",
            "PCIe_relax_order": on_off(relaxed),
            "ibv_wr_API": "ON",
            "TX_depth": config.tx_depth,
            "Mtu": session.mtu.bytes(),
            "Link_type": link_type,
            "rdma_cm_QPs": on_off(config.rdma_cm),
            "Data_ex_method": if config.rdma_cm { "rdma_cm" } else { "Ethernet" },
        },
    });
    // `-l` above 1: perftest's key, and its test name's "Post_List_" (the rows complete the name).
    if post_list > 1 {
        info["test_info"]["Post_List"] = post_list.into();
    }
    info
}

/// The header's "PCIe relax order" line: perftest's ON/OFF (its header's words) and what the
/// registrations did with the request; whether the NIC uses it is not knowable from here.
fn relaxed_ordering_line(buffers: &[crate::memory::buffers::BenchBuffer]) -> String {
    use crate::verbs::RelaxedOrdering;
    match crate::memory::buffers::relaxed_ordering(buffers) {
        RelaxedOrdering::Asked => {
            "ON (asked for on every registration, as perftest; whether the NIC uses it depends on \
                                   its Device Control bit and the device, see gdrperf doctor)"
                .into()
        }
        RelaxedOrdering::Off => "OFF (--disable_pcie_relaxed)".into(),
        RelaxedOrdering::Refused => {
            "OFF (asked for, refused by this rdma-core or kernel: registered without it)".into()
        }
    }
}

/// The header's "QoS" line: `--tclass` and `-S` (or with `-R`, `-T`) as given, and as the first
/// QP's address holds them (read back with `ibv_query_qp`).
fn quality_of_service(config: &BenchConfig, session: &Session) -> String {
    let given = match (config.traffic_class, config.service_level, config.type_of_service) {
        (Some(class), Some(level), _) => format!("traffic class {class} (--tclass), service level {level} (-S)"),
        (_, _, Some(tos)) => format!("type of service {tos} (-T, rdma_cm's RDMA_OPTION_ID_TOS), service level from rdma_cm's route (-R)"),
        _ => "traffic class and service level from rdma_cm's route (-R)".into(),
    };
    match session.local.queue_pairs.first().and_then(|queue_pair| queue_pair.address_quality_of_service()) {
        Some((level, class)) => {
            format!("{given}; QP reads back traffic class {class}, service level {level}")
        }
        None => given,
    }
}
