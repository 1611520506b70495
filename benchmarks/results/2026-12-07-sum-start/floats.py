"""The gray float32 rows of vs_opencv.py (Sobel and Laplacian) at 720p and 1080p, and a
128 x 256 Sobel (a call's fixed cost): each row's median of 101 calls (convstream's, then
cv2's), printed as JSON {row: [convstream ms, cv2 ms]}; each result is checked against cv2's
first (float32 sums in another order: within 1e-5).

Usage: python3 floats.py   (with the convstream package and opencv-python-headless installed)
"""
import json, statistics, time, cv2, numpy as np, convstream
cv2.setNumThreads(2)
def median_ms(call, a, repeat=101):
    call(a); t=[]
    for _ in range(repeat):
        s=time.perf_counter(); call(a); t.append(time.perf_counter()-s)
    return statistics.median(t)*1e3
rng=np.random.default_rng(1); res={}
sobel=convstream.Filter("sobel-x", border=cv2.BORDER_REFLECT_101, device="cpu")
laplacian=convstream.Filter("laplacian", border=cv2.BORDER_REFLECT_101, device="cpu")
rows={"Sobel": (sobel, lambda x: cv2.Sobel(x, cv2.CV_32F, 1, 0)),
      "Laplacian": (laplacian, lambda x: cv2.Laplacian(x, cv2.CV_32F))}
for size,(h,w) in {"128x256":(128,256),"720p":(720,1280),"1080p":(1080,1920)}.items():
    gray=(rng.integers(0,256,(h,w)).astype(np.float32)/255.0).astype(np.float32)
    for name,(ours,theirs) in rows.items():
        if size=="128x256" and name!="Sobel":
            continue
        assert np.max(np.abs(ours(gray)-theirs(gray))) < 1e-5
        res[f"gray float32 {name} {size}"]=(median_ms(ours,gray), median_ms(theirs,gray))
print(json.dumps(res))
