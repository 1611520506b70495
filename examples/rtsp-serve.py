#!/usr/bin/env python3
"""Serves a GStreamer launch line over RTSP, as gst-rtsp-server's test-launch example does.

    python3 examples/rtsp-serve.py [--port 8554] [--path /test] "( ... ! rtph264pay name=pay0 pt=96 )"

The launch line is one media: its payloader is named pay0 (pay1... for more streams). Clients
share one running pipeline. Needs GStreamer's RTSP server library and its Python bindings
(Debian: python3-gi gir1.2-gst-rtsp-server-1.0). Stops on SIGINT or SIGTERM.
"""

import argparse
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description="Serve a GStreamer launch line over RTSP.")
    parser.add_argument("launch", help='the media, e.g. "( videotestsrc ! x264enc ! rtph264pay name=pay0 )"')
    parser.add_argument("--port", default="8554", help="the TCP port to listen on (default 8554)")
    parser.add_argument("--path", default="/test", help="the stream's path (default /test)")
    args = parser.parse_args()
    if not args.path.startswith("/"):
        parser.error(f"--path must start with /: {args.path!r}")

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_service(args.port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(args.launch)
    factory.set_shared(True)
    server.get_mount_points().add_factory(args.path, factory)
    if server.attach(None) == 0:
        print(f"rtsp-serve: cannot listen on port {args.port}", file=sys.stderr)
        return 1
    print(f"rtsp-serve: stream ready at rtsp://127.0.0.1:{args.port}{args.path}", flush=True)

    loop = GLib.MainLoop()
    for stop in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, stop, loop.quit)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
