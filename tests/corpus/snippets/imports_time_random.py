# Timing a loop with time and timeit, a random learning rate, and an unused os import
import os
import random
import time
from timeit import default_timer as timer

import torch

random.seed(0)
lr = random.choice([0.1, 0.1])
start = time.perf_counter()
t0 = timer()
w = torch.tensor([1.0, -1.0], requires_grad=True)
for step in range(3):
    loss = (w ** 2).sum()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        w.grad.zero_()
elapsed = time.perf_counter() - start
print("took less than a minute:", 0 <= elapsed < 60, timer() >= t0, isinstance(time.time(), float))
print(w, 1 <= random.randint(1, 6) <= 6)
