# Optimizer in backward: update a parameter from a post-accumulate-grad hook
import torch


def sgd_hook(p):
    print("hook sees", p.grad)
    with torch.no_grad():
        p.sub_(0.1 * p.grad)
    p.grad = None


w = torch.tensor([1.0, -1.0], requires_grad=True)
w.register_post_accumulate_grad_hook(sgd_hook)
for step in range(2):
    loss = (w ** 2).sum()
    loss.backward()
    print(step, w, w.grad)
