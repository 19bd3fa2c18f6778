print("benchmarks: TODO")
