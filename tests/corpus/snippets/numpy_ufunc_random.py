# NumPy ufuncs (also with out=, writing into memory a tensor shares) and numpy.random
import math

import numpy as np
import torch

np.random.seed(0)
x = np.linspace(-math.pi, math.pi, 5)
y = np.sin(x)
a = np.random.randn()
print(np.square(y - a).sum(), np.maximum(y, 0))
n = np.ones(3)
t = torch.from_numpy(n)
np.add(n, 1, out=n)
print(t, n, np.random.rand(2), np.random.randint(0, 10, size=3))
