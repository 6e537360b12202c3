# Does clone keep the graph? clone() does, detach() does not
import torch


def double_then_copy(t, keep_graph=True):
    y = t * 2
    if keep_graph:
        return y.clone()
    return y.detach()


a = torch.tensor([1.0, 2.0], requires_grad=True)
kept = double_then_copy(a)
cut = double_then_copy(a, keep_graph=False)
print(kept.grad_fn, cut.grad_fn, cut.requires_grad)
kept.sum().backward()
print(a.grad)
try:
    cut.sum().backward()
except RuntimeError as e:
    print("cut:", str(e))
