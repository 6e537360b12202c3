# NumPy arrays and tensors on one memory, and copies that only a dtype change made
import numpy as np
n = np.ones(3, dtype=np.float32)
a = torch.as_tensor(n, dtype=torch.float64)
# plain: assert not np.shares_memory(a.numpy(), n)
b = torch.as_tensor(n)
# plain: assert np.shares_memory(b.numpy(), n)
c = torch.tensor(n)
# plain: assert not np.shares_memory(c.numpy(), n)
t = torch.zeros(3)
arr = t.numpy()
t.add_(1)
# plain: assert arr.tolist() == [1.0, 1.0, 1.0]
t[0] = 5
# plain: assert arr[0] == 5
n[0] = 7
# plain: assert b[0].item() == 7 and a[0].item() == 1 and c[0].item() == 1
