"""The BGR uint8 GaussianBlur 5 rows of vs_opencv.py (whole image and crop) at 720p and 1080p,
as ../2026-12-07-box-mean/box.py times its rows: each row's median of 101 calls (convstream's,
then cv2's), printed as JSON {row: [convstream ms, cv2 ms]}; each result is checked equal to
cv2's first.

Usage: python3 gauss.py   (with the convstream package and opencv-python-headless installed)
"""
import json, statistics, time, cv2, numpy as np, convstream
cv2.setNumThreads(2)
def median_ms(call, a, repeat=101):
    call(a); t=[]
    for _ in range(repeat):
        s=time.perf_counter(); call(a); t.append(time.perf_counter()-s)
    return statistics.median(t)*1e3
rng=np.random.default_rng(1); res={}
for size,(h,w) in {"720p":(720,1280),"1080p":(1080,1920)}.items():
    bgr=rng.integers(0,256,(h,w,3),dtype=np.uint8)
    f=convstream.Filter("gaussian:size=5", border=4, device="cpu")
    for name,a in {"BGR gauss 5":bgr, "BGR crop gauss 5":bgr[10:-10,10:-10]}.items():
        assert np.array_equal(f(a), cv2.GaussianBlur(a,(5,5),0))
        res[f"{name} {size}"]=(median_ms(f,a), median_ms(lambda x: cv2.GaussianBlur(x,(5,5),0),a))
print(json.dumps(res))
