//! How large a mask may be: the engines' largest side, and the largest mask file read.

/// Largest mask side the engines support.
pub const MAX_SIDE: usize = 63;

/// The largest mask file read: a 63x63 matrix of long numbers with comments fits many
/// times over; anything larger is not a mask (and is never read whole).
pub const MAX_MASK_FILE_BYTES: u64 = 256 * 1024;
