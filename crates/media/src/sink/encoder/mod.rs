//! The video encoder of a sink: [`VideoEncoder`] (`video`) set up for the source's frames
//! ([`choice`] picks the codec and pixel format, [`opening`] opens it with its options,
//! `setup` fills its context and options), converting frames when it must and keeping
//! timestamps; frames reach FFmpeg without a copy ([`lend_to_ffmpeg`](crate::ffmpeg::lend_to_ffmpeg)).

mod choice;
mod opening;
mod option_table;
mod setup;
mod trial;
mod video;

pub(crate) use choice::container_accepts;
pub(crate) use trial::encoder_option_problems;
pub use video::VideoEncoder;
