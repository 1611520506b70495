//! The options FFmpeg 6.0 to 7.1 added to its command line, in one place: the command line
//! reads them as FFmpeg's (`ffmpeg_options`), and the drop-in test (`tests/it/ffmpeg_dropin.rs`,
//! which includes this file by path) adds them to the options it reads off FFmpeg 5.1's help.

/// Options FFmpeg 6.0 to 7.1 added to `fftools/ffmpeg_opt.c`, listed by hand from FFmpeg's
/// Changelog (6.0: the heartbeat; 6.1: the `-stats_*` files, `-readrate_initial_burst`; 7.0:
/// `-stream_group`, `-display_*`; 7.1: `-print_graphs*`, `-apply_cropping`). A name missing
/// here is still refused by its full name, as no option convstream knows.
pub const FFMPEG_6_AND_7: &[(&str, bool)] = &[
    ("stats_enc_pre", true),
    ("stats_enc_post", true),
    ("stats_mux_pre", true),
    ("stats_enc_pre_fmt", true),
    ("stats_enc_post_fmt", true),
    ("stats_mux_pre_fmt", true),
    ("fix_sub_duration_heartbeat", false),
    ("readrate_initial_burst", true),
    ("stream_group", true),
    ("display_rotation", true),
    ("display_hflip", false),
    ("display_vflip", false),
    ("print_graphs", false),
    ("print_graphs_file", true),
    ("print_graphs_format", true),
    ("apply_cropping", true),
];
