#!/usr/bin/env python3
"""PyTorch's startup of a bucket set, beside graphcap-bench's Startup family in one GPU session.

For each set (67 graphs of 1,000 kernels, 8 of 100): one warm-up set, then --reps sets, each timed
on the host from the first capture to the last graph instantiated (torch.cuda.CUDAGraph's
capture_end instantiates) and uploaded, with the device synchronised at both ends. A kernel is
x.add_(1.0) on 32 floats (one block), as graphcap's `empty` is one block. Memory: the drop of
the device's free memory (torch.cuda.mem_get_info) while the set is held, and torch's own
reserved bytes for it. Prints one markdown table of medians.
"""
import argparse
import statistics
import time


def bring_up(torch, keys, launches, x, s):
    # One pool for the set, as engines share it. A fresh one each set: torch's allocator asserts
    # (use_count > 0) when a pool whose graphs were all deleted is handed to capture_begin again.
    pool = torch.cuda.graph_pool_handle()
    graphs = []
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.cuda.stream(s):
        for _ in range(keys):
            g = torch.cuda.CUDAGraph()
            g.capture_begin(pool=pool)
            for _ in range(launches):
                x.add_(1.0)
            g.capture_end()
            graphs.append(g)
    torch.cuda.synchronize()
    return graphs, time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    import torch
    x = torch.zeros(32, device="cuda")
    s = torch.cuda.Stream()
    print(f"| peer | keys | launches | ms (median of {args.reps}) | ms per graph | held MiB "
          "(free-memory drop) | torch reserved MiB |")
    print("|---|---|---|---|---|---|---|")
    for keys, launches in ((67, 1000), (8, 100)):
        bring_up(torch, keys, launches, x, s)  # warm-up: kernels loaded, allocator ready
        times, held, reserved = [], 0, 0
        for _ in range(args.reps):
            torch.cuda.synchronize()
            free_before = torch.cuda.mem_get_info()[0]
            reserved_before = torch.cuda.memory_reserved()
            graphs, took = bring_up(torch, keys, launches, x, s)
            held = max(held, free_before - torch.cuda.mem_get_info()[0])
            reserved = max(reserved, torch.cuda.memory_reserved() - reserved_before)
            times.append(took)
            del graphs
            torch.cuda.synchronize()
        ms = statistics.median(times) * 1e3
        print(f"| PyTorch {torch.__version__} | {keys} | {launches} | {ms:.1f} | {ms / keys:.2f} | "
              f"{held / 2**20:.1f} | {reserved / 2**20:.1f} |")


if __name__ == "__main__":
    main()
