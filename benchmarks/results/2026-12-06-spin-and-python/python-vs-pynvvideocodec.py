"""Frames/s of two passes over a clip in one fresh process: convstream's NVDEC reader into
torch (`ours CLIP`) or PyNvVideoCodec's demuxer and decoder (`pynv CLIP`)."""
import sys
import time

import torch

which, clip = sys.argv[1], sys.argv[2]
rates = []
for _ in range(2):
    started, frames = time.perf_counter(), 0
    if which == "ours":
        import convstream

        for _frame in convstream.read(clip, decoder="nvdec", as_="torch"):
            frames += 1
    else:
        import PyNvVideoCodec as nvc

        demuxer = nvc.CreateDemuxer(filename=clip)
        decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=0, cudastream=0, usedevicememory=True)
        for packet in demuxer:
            for surface in decoder.Decode(packet):
                torch.from_dlpack(surface)
                frames += 1
    torch.cuda.synchronize()
    rates.append(round(frames / (time.perf_counter() - started), 1))
print(which, rates)
