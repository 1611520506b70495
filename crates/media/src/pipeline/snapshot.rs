//! Copies of a running pipeline's frames for previews, made only when asked: a watcher
//! (the server's snapshot endpoint) raises a request flag, and the filter stage, which
//! checks the flag with one atomic load per frame, copies the next frame's pixels into
//! the slot. No frame is copied while nobody asks, and converting or encoding the copy
//! is the watcher's work, on its own thread. A picture NVDEC left on the GPU is copied
//! back from the device for the one frame asked for.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use convstream_core::{Frame, PixelFormat, SampleDepth};

/// Which frame of the pipeline a snapshot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotStage {
    /// A decoded frame, as the engine is given it.
    Input,
    /// A filtered frame, as the sink is given it.
    Output,
}

impl SnapshotStage {
    /// `input` or `output`, as the API names it.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotStage::Input => "input",
            SnapshotStage::Output => "output",
        }
    }
}

/// One plane of a snapshot, its rows packed tightly (`width * channels` samples each).
#[derive(Debug, Clone)]
pub struct SnapshotPlane {
    /// Samples per row, per channel.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Channels interleaved in a row (3 for packed RGB, else 1).
    pub channels: usize,
    /// How each sample is stored.
    pub depth: SampleDepth,
    /// The samples, row after row.
    pub data: Vec<u8>,
}

/// A copy of one frame's pixels.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The frame's pixel format.
    pub format: PixelFormat,
    /// The frame's width, in pixels.
    pub width: usize,
    /// The frame's height, in pixels.
    pub height: usize,
    /// The frame's position in the stream (decode order, from 0).
    pub index: u64,
    /// When the copy was made.
    pub taken_at: Instant,
    /// The frame's planes, in its format's order.
    pub planes: Vec<SnapshotPlane>,
}

impl Snapshot {
    /// Copies the pixels of `frame` (not the padding of its rows).
    pub fn of(frame: &Frame) -> Snapshot {
        let planes = frame
            .planes
            .iter()
            .map(|plane| {
                let mut data = Vec::with_capacity(plane.row_bytes() * plane.height);
                for y in 0..plane.height {
                    data.extend_from_slice(plane.row(y));
                }
                SnapshotPlane {
                    width: plane.width,
                    height: plane.height,
                    channels: plane.channels,
                    depth: plane.depth,
                    data,
                }
            })
            .collect();
        Snapshot {
            format: frame.format,
            width: frame.width,
            height: frame.height,
            index: frame.index,
            taken_at: Instant::now(),
            planes,
        }
    }
}

impl Snapshot {
    /// Copies the pixels of `frame`, whose picture is `picture` on the GPU, back from the
    /// device (its host planes give the geometry; their bytes were never written).
    #[cfg(feature = "cuda")]
    pub fn of_device(
        frame: &Frame,
        picture: &convstream_core::DevicePicture,
    ) -> Result<Snapshot, convstream_core::EngineError> {
        let shapes: Vec<(usize, usize)> = frame.planes.iter().map(|p| (p.row_bytes(), p.height)).collect();
        let data = convstream_core::copy_picture_to_host(picture, &shapes)?;
        let planes = frame
            .planes
            .iter()
            .zip(data)
            .map(|(plane, data)| SnapshotPlane {
                width: plane.width,
                height: plane.height,
                channels: plane.channels,
                depth: plane.depth,
                data,
            })
            .collect();
        Ok(Snapshot {
            format: frame.format,
            width: frame.width,
            height: frame.height,
            index: frame.index,
            taken_at: Instant::now(),
            planes,
        })
    }

    /// Without the CUDA engine no picture is on a GPU; one that were could not be copied.
    #[cfg(not(feature = "cuda"))]
    pub fn of_device(_frame: &Frame, _picture: &convstream_core::DevicePicture) -> Result<Snapshot, String> {
        Err("built without CUDA".to_string())
    }
}

/// A pending request and the latest copy, for one stage.
#[derive(Debug, Default)]
pub struct SnapshotSlot {
    requested: AtomicBool,
    latest: Mutex<Option<Arc<Snapshot>>>,
}

impl SnapshotSlot {
    /// Asks for a copy of the next frame that passes.
    pub fn request(&self) {
        self.requested.store(true, Ordering::Release);
    }

    /// Called by the pipeline for every frame: one atomic load unless a copy was asked for.
    #[inline]
    pub fn offer(&self, frame: &Frame) {
        if self.requested.load(Ordering::Relaxed) {
            self.take(frame);
        }
    }

    #[cold]
    fn take(&self, frame: &Frame) {
        if !self.requested.swap(false, Ordering::Acquire) {
            return;
        }
        let snapshot = match &frame.device {
            None => Snapshot::of(frame),
            // A picture NVDEC left on the GPU has no host pixels: this one frame is copied
            // back (a synchronous copy of one picture, only when asked).
            Some(picture) => match Snapshot::of_device(frame, picture) {
                Ok(snapshot) => snapshot,
                Err(error) => {
                    // Not asked again here: a copy that keeps failing must not cost every frame.
                    // The watcher's wait ends without a frame (503) and its next request tries again.
                    tracing::warn!("no snapshot of frame {} from the GPU: {error}", frame.index);
                    return;
                }
            },
        };
        let snapshot = Arc::new(snapshot);
        if let Ok(mut latest) = self.latest.lock() {
            *latest = Some(snapshot);
        }
    }

    /// The latest copy, if any was made.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        self.latest.lock().ok().and_then(|latest| latest.clone())
    }
}

/// The input and output slots of one pipeline.
#[derive(Debug, Default)]
pub struct Snapshots {
    /// Decoded frames, as the engine is given them.
    pub input: SnapshotSlot,
    /// Filtered frames, as the sink is given them.
    pub output: SnapshotSlot,
}

impl Snapshots {
    /// The slot of `stage`.
    pub fn slot(&self, stage: SnapshotStage) -> &SnapshotSlot {
        match stage {
            SnapshotStage::Input => &self.input,
            SnapshotStage::Output => &self.output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_core::Plane;

    fn gray_frame(index: u64, fill: u8) -> Frame {
        let shape = PixelFormat::GRAY8.plane_shapes(4, 2)[0];
        let mut frame = Frame::new(PixelFormat::GRAY8, 4, 2);
        // Rows padded to 8 bytes: the copy keeps pixels only.
        frame.planes = vec![Plane::filled(shape, 8, fill)];
        frame.index = index;
        frame
    }

    #[test]
    fn a_frame_is_copied_only_when_asked_and_once() {
        let slot = SnapshotSlot::default();
        slot.offer(&gray_frame(0, 1));
        assert!(slot.latest().is_none(), "nothing asked, nothing copied");
        slot.request();
        slot.offer(&gray_frame(1, 2));
        slot.offer(&gray_frame(2, 3));
        let copy = slot.latest().expect("a copy");
        assert_eq!(copy.index, 1, "the frame after the request, and only it");
        assert_eq!(copy.planes[0].data, vec![2; 8], "pixels without the padding");
    }
}
