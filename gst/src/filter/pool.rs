//! The buffer pool the element proposes upstream: each buffer is one block of the engine's
//! frame memory (page-locked with the CUDA engine), laid out with rows aligned to the GPU's
//! pitch and described by a VideoMeta. A decoder or `videoconvert` upstream writes its
//! pictures straight into it, and the element lends those planes to the engine instead of
//! copying them (the CUDA engine's copy engines read them as they are).
//!
//! The pool honours what upstream asks in its configuration, because upstream writes to the
//! letter of it: a decoder that renders directly into downstream buffers (FFmpeg's through
//! `avdec_*`) sets a `GstVideoAlignment` with padding rows below the picture (H.264 decodes
//! 1088 rows of a 1080-row picture, plus two, plus one for its own allocator's habits), a
//! stride alignment, a buffer size and a start alignment for its SIMD stores. Buffers that
//! ignore any of those are written past their end. So every buffer is at least the size the
//! configuration names, laid out with the configuration's alignment (combined with the GPU's
//! pitch), its memory starting on the alignment asked, with the padding asked after it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use convstream_core::POOLED_ROW_ALIGN;
use convstream_core::{BufferPool, PlaneData};
use gst::glib;
use gst::subclass::prelude::*;
use gst_video::prelude::*;

glib::wrapper! {
    pub struct FramePool(ObjectSubclass<imp::FramePool>) @extends gst::BufferPool, gst::Object;
}

impl FramePool {
    /// A pool of `info`'s frames in `memory`, its rows aligned as the engine's pooled planes
    /// are (until upstream configures it otherwise). Returns the pool and the size of its
    /// buffers.
    pub fn new(memory: Arc<BufferPool>, info: &gst_video::VideoInfo) -> Result<(FramePool, usize), glib::BoolError> {
        let layout = imp::Layout::of(memory, info, &gst_video::VideoAlignment::default(), 0, 0, 0)?;
        let size = layout.size;
        let pool: FramePool = glib::Object::new();
        *pool.imp().video() = Some(info.clone());
        *pool.imp().layout() = Some(layout);
        Ok((pool, size))
    }

    /// Whether `buffer` is one of this pool's, and then whether its block is page-locked.
    pub fn block_of(&self, buffer: &gst::BufferRef) -> Option<bool> {
        if buffer.n_memory() != 1 {
            return None;
        }
        let address = buffer.peek_memory(0).map_readable().ok()?.as_ptr() as usize;
        self.imp().blocks().get(&address).copied()
    }
}

mod imp {
    use super::*;
    use crate::filter::CAT;

    /// What the pool's buffers are made of, as the last configuration set it.
    pub struct Layout {
        pub memory: Arc<BufferPool>,
        /// The video with the pool's strides, plane offsets and padding.
        pub info: gst_video::VideoInfo,
        /// The padding and stride alignment `info` was laid out with.
        pub alignment: gst_video::VideoAlignment,
        /// Bytes of a buffer: at least the aligned frame, and at least what the
        /// configuration asked.
        pub size: usize,
        /// The alignment of a buffer's first byte (a power of two).
        pub start_align: usize,
        /// Bytes after the buffer that upstream may read or write (AllocationParams padding).
        pub padding: usize,
    }

    impl Layout {
        /// The layout of `info` with `alignment` (padding and stride alignment masks) and
        /// the GPU's pitch combined, at least `min_size` bytes, the memory aligned to
        /// `align_mask + 1` and `padding` bytes after it.
        pub fn of(
            memory: Arc<BufferPool>,
            info: &gst_video::VideoInfo,
            alignment: &gst_video::VideoAlignment,
            min_size: usize,
            align_mask: usize,
            padding: usize,
        ) -> Result<Layout, glib::BoolError> {
            let mut alignment = with_gpu_pitch(alignment);
            let mut aligned = info.clone();
            // Also widens the padding so that every stride meets its alignment.
            aligned.align(&mut alignment)?;
            Ok(Layout {
                memory,
                size: aligned.size().max(min_size),
                info: aligned,
                alignment,
                start_align: (align_mask | (POOLED_ROW_ALIGN - 1)) + 1,
                padding,
            })
        }
    }

    /// One block of frame memory as a GStreamer memory: `len` bytes from `start` within the
    /// block, `start` being where the block's bytes reach the alignment asked.
    struct Block {
        data: PlaneData,
        start: usize,
        len: usize,
    }

    impl AsRef<[u8]> for Block {
        fn as_ref(&self) -> &[u8] {
            &self.data[self.start..self.start + self.len]
        }
    }

    impl AsMut<[u8]> for Block {
        fn as_mut(&mut self) -> &mut [u8] {
            &mut self.data[self.start..self.start + self.len]
        }
    }

    #[derive(Default)]
    pub struct FramePool {
        /// The negotiated video: a configuration for another video is refused.
        video: Mutex<Option<gst_video::VideoInfo>>,
        layout: Mutex<Option<Layout>>,
        /// The address of each block this pool made, and whether it is page-locked.
        blocks: Mutex<HashMap<usize, bool>>,
    }

    impl FramePool {
        pub fn video(&self) -> MutexGuard<'_, Option<gst_video::VideoInfo>> {
            self.video.lock().unwrap_or_else(|e| e.into_inner())
        }

        pub fn layout(&self) -> MutexGuard<'_, Option<Layout>> {
            self.layout.lock().unwrap_or_else(|e| e.into_inner())
        }

        pub fn blocks(&self) -> MutexGuard<'_, HashMap<usize, bool>> {
            self.blocks.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// The layout `config` asks for, or why it cannot be honoured.
        fn layout_for(&self, config: &gst::BufferPoolConfigRef) -> Result<Layout, String> {
            let (caps, size, _, _) = config.params().ok_or("no parameters")?;
            let caps = caps.ok_or("no caps")?;
            let info = gst_video::VideoInfo::from_caps(&caps).map_err(|_| format!("caps {caps} are not video"))?;
            let video = self.video().clone().ok_or("no negotiated video")?;
            if (info.format(), info.width(), info.height()) != (video.format(), video.width(), video.height()) {
                return Err(format!(
                    "caps {caps} are not the negotiated {}x{} {}",
                    video.width(),
                    video.height(),
                    video.format()
                ));
            }
            let alignment = if config.has_option("GstBufferPoolOptionVideoAlignment") {
                config.video_alignment().unwrap_or_default()
            } else {
                gst_video::VideoAlignment::default()
            };
            let (align_mask, padding) = config
                .allocator()
                .map_or((0, 0), |(_, params)| (params.align(), params.padding()));
            let memory = self.layout().as_ref().ok_or("no memory")?.memory.clone();
            Layout::of(memory, &info, &alignment, size as usize, align_mask, padding)
                .map_err(|e| format!("cannot align {caps}: {e}"))
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for FramePool {
        const NAME: &'static str = "GstConvstreamFramePool";
        type Type = super::FramePool;
        type ParentType = gst::BufferPool;
    }

    impl ObjectImpl for FramePool {}
    impl GstObjectImpl for FramePool {}

    impl BufferPoolImpl for FramePool {
        fn options() -> &'static [&'static str] {
            static OPTIONS: [&str; 2] = ["GstBufferPoolOptionVideoMeta", "GstBufferPoolOptionVideoAlignment"];
            &OPTIONS
        }

        /// Takes upstream's configuration to the letter: its alignment, its size (when
        /// larger than the frame), its allocation parameters. The size the pool will really
        /// make is written back into the configuration, as GstVideoBufferPool does.
        fn set_config(&self, config: &mut gst::BufferPoolConfigRef) -> bool {
            let layout = match self.layout_for(config) {
                Ok(layout) => layout,
                Err(reason) => {
                    gst::warning!(CAT, imp = self, "configuration refused: {reason}");
                    return false;
                }
            };
            if let Some((caps, _, min, max)) = config.params() {
                config.set_params(caps.as_ref(), layout.size as u32, min, max);
            }
            if config.has_option("GstBufferPoolOptionVideoAlignment") {
                config.set_video_alignment(&layout.alignment);
            }
            *self.layout() = Some(layout);
            self.parent_set_config(config)
        }

        fn alloc_buffer(&self, _params: Option<&gst::BufferPoolAcquireParams>) -> Result<gst::Buffer, gst::FlowError> {
            let layout = self.layout();
            let layout = layout.as_ref().ok_or(gst::FlowError::NotNegotiated)?;
            // Room to move the start to the alignment asked, and the padding after the end.
            let data = layout
                .memory
                .take(layout.start_align - 1 + layout.size + layout.padding);
            let page_locked = data.is_page_locked();
            let start = (data.as_ptr() as usize).next_multiple_of(layout.start_align) - data.as_ptr() as usize;
            let block = Block {
                data,
                start,
                len: layout.size,
            };
            let address = block.as_ref().as_ptr() as usize;
            let mut buffer = gst::Buffer::from_mut_slice(block);
            // Upstream writes at these strides and offsets (the meta is kept across reuse: the
            // base pool locks what a buffer carries when it is made).
            gst_video::VideoMeta::add_full(
                buffer.get_mut().ok_or(gst::FlowError::Error)?,
                gst_video::VideoFrameFlags::empty(),
                layout.info.format(),
                layout.info.width(),
                layout.info.height(),
                layout.info.offset(),
                layout.info.stride(),
            )
            .map_err(|_| gst::FlowError::Error)?;
            self.blocks().insert(address, page_locked);
            Ok(buffer)
        }

        fn free_buffer(&self, buffer: gst::Buffer) {
            if buffer.n_memory() == 1 {
                if let Ok(map) = buffer.peek_memory(0).map_readable() {
                    self.blocks().remove(&(map.as_ptr() as usize));
                }
            }
            self.parent_free_buffer(buffer);
        }
    }

    /// `alignment` with every stride a multiple of the GPU's pitch as well.
    fn with_gpu_pitch(alignment: &gst_video::VideoAlignment) -> gst_video::VideoAlignment {
        let mut stride_align = *alignment.stride_align();
        for mask in &mut stride_align {
            *mask |= (POOLED_ROW_ALIGN - 1) as u32;
        }
        gst_video::VideoAlignment::new(
            alignment.padding_top(),
            alignment.padding_bottom(),
            alignment.padding_left(),
            alignment.padding_right(),
            &stride_align,
        )
    }
}
