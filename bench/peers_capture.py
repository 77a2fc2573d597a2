#!/usr/bin/env python3
"""Peers of graphcap's capture, measured beside graphcap-bench in one GPU session (docs/performance.md, "Peers").

For N in 10, 100, 1000 (and 10000 with --big): a pass of N one-kernel launches on a 1024-float
buffer, captured into a CUDA graph and instantiated by PyTorch (torch.cuda.CUDAGraph:
capture_begin..capture_end, which instantiates) and by CuPy (Stream.begin_capture..end_capture,
which instantiates; then upload). Each row is the median of --reps repetitions after one warm-up,
timed on the host with the stream synchronised before and after. Replay: the median per
cuGraphLaunch over 200 launches and one synchronisation. Prints one markdown table.
"""
import argparse
import statistics
import sys
import time


def median_us(samples):
    return statistics.median(samples) * 1e6


def torch_rows(sizes, reps):
    import torch
    x = torch.zeros(1024, device="cuda")
    s = torch.cuda.Stream()
    rows = []
    for n in sizes:
        capture = []
        graph = None
        for rep in range(reps + 1):
            g = torch.cuda.CUDAGraph()
            torch.cuda.synchronize()
            with torch.cuda.stream(s):
                t0 = time.perf_counter()
                g.capture_begin()
                for _ in range(n):
                    x.add_(1.0)
                g.capture_end()
                t1 = time.perf_counter()
            torch.cuda.synchronize()
            if rep:
                capture.append(t1 - t0)
            graph = g
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            graph.replay()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        rows.append(("PyTorch " + torch.__version__, n, median_us(capture), None,
                     (t1 - t0) / 200 * 1e6, (t2 - t0) / 200 * 1e6))
    return rows


def cupy_rows(sizes, reps):
    import cupy as cp
    add_one = cp.RawKernel(r'''
extern "C" __global__ void add_one(float* x, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}''', "add_one")
    x = cp.zeros(1024, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    add_one((4,), (256,), (x, cp.uint32(1024)), stream=s)  # compiled and loaded before timing
    s.synchronize()
    rows = []
    for n in sizes:
        capture, upload = [], []
        graph = None
        for rep in range(reps + 1):
            s.synchronize()
            t0 = time.perf_counter()
            s.begin_capture()
            for _ in range(n):
                add_one((4,), (256,), (x, cp.uint32(1024)), stream=s)
            g = s.end_capture()
            t1 = time.perf_counter()
            g.upload(s)
            s.synchronize()
            t2 = time.perf_counter()
            if rep:
                capture.append(t1 - t0)
                upload.append(t2 - t1)
            graph = g
        s.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            graph.launch(s)
        t1 = time.perf_counter()
        s.synchronize()
        t2 = time.perf_counter()
        rows.append(("CuPy " + cp.__version__, n, median_us(capture), median_us(upload),
                     (t1 - t0) / 200 * 1e6, (t2 - t0) / 200 * 1e6))
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--big", action="store_true", help="also 10,000 launches")
    a = p.parse_args()
    sizes = [10, 100, 1000] + ([10000] if a.big else [])
    rows = []
    for name, f in (("torch", torch_rows), ("cupy", cupy_rows)):
        try:
            rows += f(sizes, a.reps)
        except Exception as e:  # a peer missing on this machine is said, not hidden
            print(f"{name}: not measured: {e!r}", file=sys.stderr)
    print("| peer | launches | capture + instantiate (us) | upload (us) | replay: launch (us) | "
          "replay: launch + sync per graph (us) |")
    print("|---|---|---|---|---|---|")
    for peer, n, cap, up, launch, total in rows:
        up_s = "-" if up is None else f"{up:.1f}"
        print(f"| {peer} | {n} | {cap:.1f} | {up_s} | {launch:.2f} | {total:.2f} |")


if __name__ == "__main__":
    main()
