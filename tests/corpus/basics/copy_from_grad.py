# copy_ from a tensor that requires grad into a plain tensor puts it into the graph
import torch

src = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
dst = torch.zeros(3)
print(dst.requires_grad, dst._version)
dst.copy_(src)
print(dst.requires_grad, dst.is_leaf, dst._version)
out = (dst * 3).sum()
out.backward()
print(src.grad)
half = torch.zeros(2, dtype=torch.float64)
half.copy_(src[:2])
