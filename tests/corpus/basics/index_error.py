# indexing past the end is an IndexError
# expect-error: IndexError
import torch

t = torch.arange(3)
last = t[-1]
x = t[5]
