# retain_grad() on an intermediate conv feature map so its .grad is kept
import torch
import torch.nn as nn

torch.manual_seed(0)
conv = nn.Conv2d(1, 2, kernel_size=2)
norm = nn.LayerNorm([2, 2])
img = torch.randn(1, 1, 3, 3)
feat = conv(img)
feat.retain_grad()
out = norm(feat)
loss = (out * torch.arange(4.0).view(2, 2)).sum()
loss.backward()
print(feat.shape, feat.grad is not None, feat.is_leaf)
print(conv.weight.grad.shape, norm.weight.grad)
sig = torch.sigmoid(conv(img))
print(sig.grad is None)
