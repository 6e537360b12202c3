# Training-log lines with str.format, format_map and format()
import torch

w = torch.tensor([0.5, -1.5], requires_grad=True)
x = torch.tensor([2.0, 1.0])
for step in range(3):
    loss = ((w * x).sum() - 1.0) ** 2
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
    print("step {:>2}: loss={:.4f} w={}".format(step, loss.item(), w.tolist()))
print("{0.shape} {0.dtype} {1[0]:+.2f}".format(w, w.tolist()))
print("{name}: {value:08.3f}".format_map({"name": "w0", "value": w[0].item()}))
print(format(loss.item(), ".3e"), format(7, "b"), "{{braces}} {}".format("ok"))
