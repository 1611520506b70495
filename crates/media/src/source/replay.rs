//! The packets an NVDEC decoder was given since the keyframe before last, kept so that a
//! fresh decoder can decode them again after a failure and recover the frames the failed
//! one still held (see [`super::decoder`]).

use ffmpeg::Packet;
use ffmpeg_next as ffmpeg;
use std::collections::VecDeque;

/// Packets kept for a replay, at most: two groups of pictures of a 25 fps stream with a
/// keyframe every 10 s, and a bound on memory (a 4K intra-heavy stream).
const REPLAY_MAX_PACKETS: usize = 512;
const REPLAY_MAX_BYTES: usize = 64 << 20;
/// Another reference to the packet's data (FFmpeg's packets are reference-counted), not a
/// copy of it: `Packet::clone` also makes the data writable, which copies every packet on
/// NVDEC's per-packet path; a replay only reads them.
fn shared_copy(packet: &Packet) -> Packet {
    use ffmpeg::packet::{Mut, Ref};
    let mut copy = Packet::empty();
    // SAFETY: both packets are valid; av_packet_ref takes a new reference to the source's
    // buffer (or copies data that has none) and copies its properties.
    let status = unsafe { ffmpeg::ffi::av_packet_ref(copy.as_mut_ptr(), packet.as_ptr()) };
    if status < 0 {
        // Out of memory: a plain copy is all that is left to try.
        return packet.clone();
    }
    copy
}

/// The packets since the keyframe before the last one, bounded in count and bytes. A
/// replay must start at a keyframe, so packets before the first keyframe are not kept.
#[derive(Default)]
pub(super) struct ReplayBuffer {
    /// Groups of pictures, each starting with a keyframe; at most two.
    groups: VecDeque<Vec<Packet>>,
    bytes: usize,
}

impl ReplayBuffer {
    pub(super) fn push(&mut self, packet: &Packet) {
        if packet.is_key() {
            self.groups.push_back(Vec::new());
            if self.groups.len() > 2 {
                self.drop_oldest();
            }
        }
        let Some(group) = self.groups.back_mut() else {
            return;
        };
        group.push(shared_copy(packet));
        self.bytes += packet.size();
        while self.len() > REPLAY_MAX_PACKETS || self.bytes > REPLAY_MAX_BYTES {
            if self.groups.len() > 1 {
                self.drop_oldest();
            } else {
                // One group longer than the bound: no replay until the next keyframe.
                self.clear();
            }
        }
    }

    fn len(&self) -> usize {
        self.groups.iter().map(Vec::len).sum()
    }

    fn drop_oldest(&mut self) {
        if let Some(group) = self.groups.pop_front() {
            self.bytes -= group.iter().map(Packet::size).sum::<usize>();
        }
    }

    pub(super) fn clear(&mut self) {
        self.groups.clear();
        self.bytes = 0;
    }

    /// Every kept packet, oldest first, leaving the buffer empty.
    pub(super) fn take(&mut self) -> Vec<Packet> {
        self.bytes = 0;
        self.groups.drain(..).flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(size: usize, key: bool, pts: i64) -> Packet {
        let mut packet = Packet::new(size);
        packet.set_pts(Some(pts));
        if key {
            packet.set_flags(ffmpeg::codec::packet::Flags::KEY);
        }
        packet
    }

    fn pts_of(packets: &[Packet]) -> Vec<i64> {
        packets.iter().filter_map(Packet::pts).collect()
    }

    #[test]
    fn replay_keeps_the_last_two_groups_from_a_keyframe() {
        let mut buffer = ReplayBuffer::default();
        buffer.push(&packet(10, false, 0)); // before any keyframe: not replayable
        for pts in 1..=9 {
            buffer.push(&packet(10, pts % 3 == 1, pts));
        }
        assert_eq!(pts_of(&buffer.take()), vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(buffer.len(), 0);
        buffer.push(&packet(10, false, 10));
        assert_eq!(buffer.len(), 0, "after a take, packets wait for a keyframe");
    }

    #[test]
    fn replay_is_bounded() {
        let mut buffer = ReplayBuffer::default();
        buffer.push(&packet(10, true, 0));
        for pts in 1..(REPLAY_MAX_PACKETS as i64 + 5) {
            buffer.push(&packet(10, false, pts));
        }
        assert_eq!(buffer.len(), 0, "one group over the bound is dropped whole");
        buffer.push(&packet(REPLAY_MAX_BYTES / 2, true, 1000));
        buffer.push(&packet(REPLAY_MAX_BYTES / 2, true, 1001));
        buffer.push(&packet(10, false, 1002));
        assert_eq!(pts_of(&buffer.take()), vec![1001, 1002], "bytes bound the buffer too");
    }
}
