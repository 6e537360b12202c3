# Backward twice fails: catch the RuntimeError, then retain_graph=True fixes it
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x ** 2).sum()
y.backward()
try:
    y.backward()
except RuntimeError as e:
    print("caught:", "second time" in str(e))
else:
    print("no error?")
finally:
    print("finally runs")
z = (x ** 3).sum()
z.backward(retain_graph=True)
z.backward()
print(x.grad)
