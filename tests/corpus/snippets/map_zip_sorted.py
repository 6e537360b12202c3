# Per-sample losses with map/zip/enumerate, then backward through the two worst ones
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
xs = [torch.randn(3) for _ in range(4)]
ys = [1.0, -1.0, 0.5, 2.0]


def sample_loss(pair):
    x, y = pair
    return (w @ x - y) ** 2


losses = list(map(sample_loss, zip(xs, ys)))
ranked = sorted([(loss.item(), i) for i, loss in enumerate(losses)], reverse=True)
print([i for _, i in ranked])
worst = [losses[i] for _, i in ranked[:2]]
total = sum(worst)
total.backward()
print(w.grad, list(reversed([round(v, 3) for v, _ in ranked])))
