# writing a tensor that requires grad into a plain buffer puts the buffer in the graph
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
buf = torch.zeros(3)
buf[1] = (w * 2).sum()
buf[2:] = w[:1] * 5
print(buf.grad_fn, buf._version, buf.requires_grad)
buf.sum().backward()
picked = buf[torch.tensor([0, 2])]
masked = torch.where(w.detach().gt(1.5), w, torch.zeros(2))
filled = torch.zeros(4).masked_fill_(torch.tensor([True, False, True, False]), 9.0)
print(w.grad, picked, masked, filled)
