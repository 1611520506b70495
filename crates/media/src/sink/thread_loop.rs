//! The sink thread's loop ([`Sink::run`](super::Sink::run)): frames and copied packets
//! written as they come, periodic flushes, the end of the output, a closed pipe told from a
//! failure.

use crossbeam_channel::{select, Receiver, RecvTimeoutError};
use ffmpeg_next as ffmpeg;
use std::time::{Duration, Instant};

use super::contract::{Sink, SinkError, SinkOutcome};
use crate::ffmpeg::PassthroughPacket;
use crate::stats::Counters;
use convstream_core::Frame;

impl dyn Sink {
    /// Writes frames and copied packets as they come until both channels close.
    pub fn run(
        mut self: Box<Self>,
        frames: &Receiver<Frame>,
        packets: &Receiver<PassthroughPacket>,
        counters: &Counters,
        on_frame: &dyn Fn(),
    ) -> Result<SinkOutcome, SinkError> {
        let mut frames_open = true;
        let mut packets_open = true;
        let mut frames_written = 0u64;
        while frames_open || packets_open {
            // Wake up for the next flush even when nothing comes (a stalled live input).
            let wait = self.flush_due_in().unwrap_or(Duration::from_secs(3600));
            let result = if frames_open && packets_open {
                select! {
                    recv(frames) -> frame => match frame {
                        Ok(frame) => self.take_frame(frame, counters, on_frame, &mut frames_written),
                        Err(_) => { frames_open = false; Ok(()) }
                    },
                    recv(packets) -> packet => match packet {
                        Ok(packet) => self.write_packet(packet, counters),
                        Err(_) => { packets_open = false; Ok(()) }
                    },
                    default(wait) => Ok(()),
                }
            } else if frames_open {
                match frames.recv_timeout(wait) {
                    Ok(frame) => self.take_frame(frame, counters, on_frame, &mut frames_written),
                    Err(RecvTimeoutError::Timeout) => Ok(()),
                    Err(RecvTimeoutError::Disconnected) => {
                        frames_open = false;
                        Ok(())
                    }
                }
            } else {
                match packets.recv_timeout(wait) {
                    Ok(packet) => self.write_packet(packet, counters),
                    Err(RecvTimeoutError::Timeout) => Ok(()),
                    Err(RecvTimeoutError::Disconnected) => {
                        packets_open = false;
                        Ok(())
                    }
                }
            };
            let result = result.and_then(|()| self.flush_if_due());
            if let Err(error) = result {
                return write_error(self.url(), error);
            }
        }
        let started = Instant::now();
        let finished = self.finish(counters);
        Counters::add_time(&counters.sink_busy_ns, started.elapsed());
        match finished {
            // Only an output something was written to takes its name or stays: an empty run
            // (an input with no frame in the part asked for, a stop right after the start)
            // never replaces a file with an empty one, nor leaves one nobody can read.
            Ok(()) if frames_written == 0 && !self.keeps_empty() => {
                self.discard();
                Ok(SinkOutcome::Finished)
            }
            Ok(()) => self.complete().map(|()| SinkOutcome::Finished),
            Err(error) => write_error(self.url(), error),
        }
    }

    /// Writes a frame and counts it as written.
    fn take_frame(
        &mut self,
        frame: Frame,
        counters: &Counters,
        on_frame: &dyn Fn(),
        frames_written: &mut u64,
    ) -> Result<(), ffmpeg::Error> {
        let decoded = frame.timeline.decoded;
        self.write_frame(frame, counters)?;
        *frames_written += 1;
        if let Some(decoded_at) = decoded {
            Counters::observe(&counters.stages.end_to_end, decoded_at.elapsed());
        }
        counters.count_written();
        on_frame();
        Ok(())
    }
}

fn write_error(url: &str, error: ffmpeg::Error) -> Result<SinkOutcome, SinkError> {
    match error {
        ffmpeg::Error::Other { errno } if errno == libc_epipe() => Ok(SinkOutcome::OutputClosed),
        error => Err(SinkError::Write {
            url: url.to_string(),
            error,
        }),
    }
}

const fn libc_epipe() -> i32 {
    32 // EPIPE on Linux
}
