//! gdr-send-bw's two sides on the SEND/RECV engine, whatever the memory: which side sends and
//! receives, the receives kept posted across sizes, the plan of a size, the data check, the
//! row. The bench only says what it is and what it needs of each side.

use crate::engines::credits::SenderCredits;
use crate::error::Result;
use crate::harness::benchmark::Engine;
use crate::harness::session::Session;
use crate::memory::check_failure::CheckFailure;
use crate::options::config::{BandwidthConfig, BenchConfig};
use crate::options::send::SendConfig;
use crate::output::rows::{BandwidthFigures, BandwidthSettings};
use crate::output::send_row::{SendBandwidthRow, SendFigures, SendSettings};
use crate::output::RowContext;

use super::plan::SendPlan;
use super::receiver::ReceiveQueues;
use super::stream::{post_credit_receives, stream_send, SendConnection};

/// The settings of a SEND stream.
#[derive(Debug, Clone)]
pub struct SendStream {
    pub common: BenchConfig,
    pub bandwidth: BandwidthConfig,
    pub send: SendConfig,
}

impl SendStream {
    /// This side sends: the client, both sides when bidirectional.
    pub fn sends(&self, session: &Session) -> bool {
        session.is_client() || self.bandwidth.bidirectional
    }

    /// This side receives: the server, both sides when bidirectional.
    pub fn receives(&self, session: &Session) -> bool {
        !session.is_client() || self.bandwidth.bidirectional
    }
}

impl Engine for SendStream {
    type Report = SendFigures;
    type Row = SendBandwidthRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    /// Before a size: the sender's pattern written, the receives posted (once per connection:
    /// they are reposted as consumed, across sizes).
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()> {
        if self.common.validate && self.sends(session) {
            session.fill_pattern(size)?;
        }
        if self.receives(session) && session.connection.state::<SendConnection>().receive_queues.is_none() {
            let queues = ReceiveQueues::post(
                session,
                self.send.rx_depth,
                self.common.validate,
                self.common.max_size(),
                self.bandwidth.bidirectional,
            )?;
            session.connection.state::<SendConnection>().receive_queues = Some(queues);
        }
        if self.sends(session) && session.connection.state::<SendConnection>().send_credits.is_none() {
            // With -b the credits land in the receives just posted, which keep room for them.
            let credits = match self.bandwidth.bidirectional {
                true => SenderCredits::new(session.local.queue_pairs.len()),
                false => post_credit_receives(&mut session.local.queue_pairs)?,
            };
            session.connection.state::<SendConnection>().send_credits = Some(credits);
        }
        Ok(())
    }

    /// One size on this side: what it sent and received, with its copy time.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<SendFigures>> {
        let plan = SendPlan {
            size,
            stop: self.common.stop,
            warmup: self.common.warmup,
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            post_list: self.bandwidth.post_list,
            margin_seconds: self.common.margin_seconds,
            inline: session.local.buffers[0].host_bytes().is_some() && size <= self.send.inline_size as usize,
            sends: self.sends(session),
            receives: self.receives(session),
            stall_timeout: self.common.timeout,
            validate: self.common.validate,
            peer_staged: session.peer_memory().is_staged(),
        };
        session.take_copy_seconds();
        let reports = stream_send(session, &plan)?;
        let rx_depth = session
            .connection
            .state::<SendConnection>()
            .receive_queues
            .as_ref()
            .map(ReceiveQueues::depth)
            .unwrap_or(0);
        // One direction at a time when staged: the copies belong to whichever this side did.
        let copy_seconds = session.take_copy_seconds();
        let with_copies = |report: &_| BandwidthFigures { copy_seconds, ..BandwidthFigures::from(report) };
        let sent = reports.sent.as_ref().map(with_copies);
        let received = reports.received.as_ref().map(BandwidthFigures::from).map(|figures| match sent {
            Some(_) => figures,
            None => BandwidthFigures { copy_seconds, ..figures },
        });
        Ok(Some(SendFigures { sent, received, rx_depth }))
    }

    /// After a size: the first payload that failed its check (a host ring's, or a staged
    /// ring's message by message).
    fn check(&self, session: &mut Session, _size: usize) -> Result<Option<CheckFailure>> {
        if !self.common.validate || !self.receives(session) {
            return Ok(None);
        }
        let failure = session
            .connection
            .state::<SendConnection>()
            .receive_queues
            .as_mut()
            .and_then(ReceiveQueues::take_failure);
        Ok(failure.or_else(|| session.take_message_failure()))
    }

    /// The row of one size: the sender's figures in the `bw_*` columns, the receiver's in the
    /// `rx_*` ones (with `-b`, both directions summed in each).
    fn row(
        &self,
        context: &RowContext,
        ours: Option<SendFigures>,
        peer: Option<SendFigures>,
        validation: &str,
    ) -> Option<SendBandwidthRow> {
        let settings = BandwidthSettings {
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            bidirectional: self.bandwidth.bidirectional,
        };
        let reports: Vec<SendFigures> = ours.into_iter().chain(peer).collect();
        SendBandwidthRow::new(
            context,
            settings,
            SendSettings { inline_size: self.send.inline_size },
            &reports,
            validation,
        )
    }
}
