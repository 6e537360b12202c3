# tensors do not support negative slice steps: use flip
# expect-error: ValueError
import torch

t = torch.arange(4)
rev = t.flip(0)
bad = t[::-1]
