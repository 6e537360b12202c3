# assigning a tensor to .grad: later backward calls accumulate into that very tensor
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
buf = torch.zeros(2)
x.grad = buf
(x * 3).sum().backward()
print(buf, x.grad is buf)
