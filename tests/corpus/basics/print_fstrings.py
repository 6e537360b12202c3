# print of tensors and f-strings
import torch

x = torch.tensor([1.5, -2.25, 3.0], requires_grad=True)
print(x)
print("sum:", x.sum())
print(f"mean={x.mean().item():.3f} shape={x.shape} dtype={x.dtype}")
print(f"{x!r}")
y = x * 2
print(y)
print(y.grad_fn)
print(x, y, sep=" | ", end="!\n")
print(f"{x.norm():.2f}", x.tolist(), torch.arange(3))
print(torch.tensor([[1, 2], [3, 4]]), torch.tensor(True))
print(f"{len(x)} {x.numel()} {x[0].item()}")
