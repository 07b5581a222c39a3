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

    def alternating_ms(self, calls, rounds=5, n=10):
        """Medians (ms) of `calls`, timed in turn for `rounds` rounds of `n` calls each, each the
        median of its rounds' medians: the H200's clock drifts during a run (the same call timed
        back to back varied by up to 7%), and alternating makes the drift weigh on all alike."""
        times = [[] for _ in calls]
        for _ in range(rounds):
            for i, call in enumerate(calls):
                times[i].append(self.median_ms(call, n=n))
        return [sorted(t)[len(t) // 2] for t in times]
