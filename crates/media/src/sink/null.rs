//! The `null` output: frames are counted and dropped, copied streams are not taken
//! (benchmarks, and checks that only decode and filter).

use ffmpeg_next as ffmpeg;
use std::path::PathBuf;

use super::contract::Sink;
use crate::ffmpeg::PassthroughPacket;
use crate::stats::Counters;
use convstream_core::Frame;

/// Discards every frame.
pub(super) struct NullSink;

impl Sink for NullSink {
    fn path(&self) -> Option<PathBuf> {
        None
    }

    fn copies_packets(&self) -> bool {
        false
    }

    fn url(&self) -> &str {
        "null"
    }

    fn write_frame(&mut self, _frame: Frame, _counters: &Counters) -> Result<(), ffmpeg::Error> {
        Ok(())
    }

    fn write_packet(&mut self, _packet: PassthroughPacket, _counters: &Counters) -> Result<(), ffmpeg::Error> {
        Ok(())
    }

    fn finish(&mut self, _counters: &Counters) -> Result<(), ffmpeg::Error> {
        Ok(())
    }
}
