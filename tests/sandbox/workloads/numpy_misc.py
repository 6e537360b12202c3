import math
import random
import sys

import numpy as np
import torch

a = np.random.default_rng(0).standard_normal((200, 200))
t = torch.from_numpy(a)
print((t @ t).numpy().trace(), np.linalg.inv(a[:5, :5]).sum(), np.fft.fft(a[0]).real.sum())
print(np.linalg.svd(a[:50, :50])[1][:3], torch.linalg.eigh(t[:20, :20] @ t[:20, :20].T)[0][:2])
print(torch.tensor([1.5, float("nan")]), f"{math.pi:.3f}", random.Random(0).random())
print(sys.getsizeof(t), repr(t[:2, :2]), t.dtype, t.float().half().sum())
print(torch.randn(3, 3).to_sparse().to_dense().sum(), torch.fft.rfft(torch.randn(16)).abs().sum())
