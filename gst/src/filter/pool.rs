//! The buffer pool the element proposes upstream: each buffer is one block of the engine's
//! frame memory (page-locked with the CUDA engine), laid out with rows aligned to the GPU's
//! pitch and described by a VideoMeta. A decoder or `videoconvert` upstream writes its
//! pictures straight into it, and the element lends those planes to the engine instead of
//! copying them (the CUDA engine's copy engines read them as they are).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use convstream::frame::POOLED_ROW_ALIGN;
use convstream::host_buffers::{BufferPool, PlaneData};
use gst::glib;
use gst::subclass::prelude::*;

glib::wrapper! {
    pub struct FramePool(ObjectSubclass<imp::FramePool>) @extends gst::BufferPool, gst::Object;
}

impl FramePool {
    /// A pool of `info`'s frames in `memory`, its rows aligned as the engine's pooled planes
    /// are. Returns the pool and the size of its buffers.
    pub fn new(memory: Arc<BufferPool>, info: &gst_video::VideoInfo) -> Result<(FramePool, usize), glib::BoolError> {
        let mut aligned = info.clone();
        let mut alignment = gst_video::VideoAlignment::new(
            0,
            0,
            0,
            0,
            &[(POOLED_ROW_ALIGN - 1) as u32; gst_video::VIDEO_MAX_PLANES],
        );
        aligned.align(&mut alignment)?;
        let pool: FramePool = glib::Object::new();
        *pool.imp().layout() = Some(imp::Layout {
            memory,
            info: aligned.clone(),
            size: aligned.size(),
        });
        Ok((pool, aligned.size()))
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

    /// What the pool's buffers are made of.
    pub struct Layout {
        pub memory: Arc<BufferPool>,
        /// The negotiated video with the pool's strides and plane offsets.
        pub info: gst_video::VideoInfo,
        pub size: usize,
    }

    /// One block of frame memory as a GStreamer memory.
    struct Block(PlaneData);

    impl AsRef<[u8]> for Block {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }

    impl AsMut<[u8]> for Block {
        fn as_mut(&mut self) -> &mut [u8] {
            &mut self.0
        }
    }

    #[derive(Default)]
    pub struct FramePool {
        layout: Mutex<Option<Layout>>,
        /// The address of each block this pool made, and whether it is page-locked.
        blocks: Mutex<HashMap<usize, bool>>,
    }

    impl FramePool {
        pub fn layout(&self) -> MutexGuard<'_, Option<Layout>> {
            self.layout.lock().unwrap_or_else(|e| e.into_inner())
        }

        pub fn blocks(&self) -> MutexGuard<'_, HashMap<usize, bool>> {
            self.blocks.lock().unwrap_or_else(|e| e.into_inner())
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

        fn alloc_buffer(&self, _params: Option<&gst::BufferPoolAcquireParams>) -> Result<gst::Buffer, gst::FlowError> {
            let layout = self.layout();
            let layout = layout.as_ref().ok_or(gst::FlowError::NotNegotiated)?;
            let block = layout.memory.take(layout.size);
            let page_locked = block.is_page_locked();
            let address = block.as_ptr() as usize;
            let mut buffer = gst::Buffer::from_mut_slice(Block(block));
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
}
