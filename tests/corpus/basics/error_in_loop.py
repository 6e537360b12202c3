# an error inside a loop body on the second iteration reports that statement's line
# expect-error: RuntimeError
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
for i in range(3):
    print("iteration", i)
    y.backward()
print("not reached")
