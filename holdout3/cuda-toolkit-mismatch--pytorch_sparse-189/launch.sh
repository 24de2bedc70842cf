!pip3 install torch-scatter
!pip3 install torch-sparse
!pip3 install torch-cluster
!pip3 install torch-spline-conv
!pip3 install torch-geometric
