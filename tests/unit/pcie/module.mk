# tests/unit/pcie: the PCIe-emulation transport (transport/pcie_*.c) in process: controllers on a
# server thread with real poll groups and malloc bdevs, driven by the vfio-user test client.
pcie_TEST_LIBS := host transport controller backend dpa hw vfu common
