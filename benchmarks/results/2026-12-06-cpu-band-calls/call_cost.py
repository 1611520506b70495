# The cost of one small call from Python (a 16 x 16 float32 Sobel), median of 20,001, for the
# package in the folder given: python3 call_cost.py PACKAGE_FOLDER
import sys; sys.path.insert(0, sys.argv[1])
import time, numpy as np, convstream, statistics
g=np.random.default_rng(0).random((16,16),dtype=np.float32); out=np.empty_like(g)
s=convstream.Filter("sobel-x",border=4,device="cpu")
def med(f,n=20001):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return statistics.median(ts)*1e6
print(sys.argv[1][-1], "16x16 call %.2f us"%med(lambda: s(g)))
