"""The timing the quick attention peers share with `tilejit bench`: L2 flushed (a 256 MB memset)
before each call, CUDA events around the call alone, the median after warm-up calls."""


class FlushedTimer:
    def __init__(self, torch):
        self.torch = torch
        self.flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")

    def median_ms(self, fn, n=30, warmup=3):
        torch = self.torch
        for _ in range(warmup):
            fn()
        ts = []
        for _ in range(n):
            self.flush.zero_()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        ts.sort()
        return ts[len(ts) // 2]
